//! Runaways that an in-process pass cannot always stop (C built-ins that never reach the
//! interrupt handler) end at the deadline in a sandbox process: the process is killed and
//! replaced. One case per kind of runaway, run four at a time.

mod common;

use std::time::{Duration, Instant};

use codemode::PassEnd;
use codemode_quickjs::{ProcessExecutor, QuickJsOptions};
use common::{process_executor, returned, run_on, TestHost};
use futures::future::join_all;
use serde_json::json;

/// The deadline of every pass here.
const DEADLINE: Duration = Duration::from_secs(1);
/// How much later than the deadline a pass may end.
const LATE: Duration = Duration::from_secs(1);

/// The built-ins that loop in C over a receiver's `length`, with the length each is given.
const BUILT_INS: [(&str, &str); 9] = [
    ("Array.prototype.reverse.call(o)", "2**53 - 1"),
    ("Array.prototype.copyWithin.call(o, 0, 1)", "2**53 - 1"),
    ("Array.prototype.splice.call(o, 0, 1)", "2**53 - 1"),
    ("Array.prototype.shift.call(o)", "2**53 - 1"),
    ("Array.prototype.unshift.call(o, 1)", "2**32"),
    ("Array.prototype.slice.call(o, 0)", "2**32 - 1"),
    ("Array.prototype.sort.call(o)", "2**53 - 1"),
    ("Array.prototype.flat.call(o)", "2**53 - 1"),
    ("Array.prototype.join.call(o, '')", "2**53 - 1"),
];

/// Ways to hand a built-in a `length` that passes the sandbox's check (0) and is huge when
/// the built-in reads it again. `LEN` is replaced by the length.
const LENGTHS: [(&str, &str); 3] = [
    (
        "getter",
        "let n = 0; const o = { get length() { return n++ === 0 ? 0 : LEN; } };",
    ),
    (
        "valueOf",
        "let n = 0; const o = { length: { valueOf() { return n++ === 0 ? 0 : LEN; } } };",
    ),
    (
        "Proxy",
        "let n = 0; const o = new Proxy({}, { get(t, k) { return k === 'length' ? (n++ === 0 ? 0 : LEN) : undefined; } });",
    ),
];

/// Runaways of other kinds: string searches, big BigInts, slow comparators.
const OTHERS: [&str; 13] = [
    "const h = 'a'.repeat(4e6), n = 'a'.repeat(2e6) + 'b'; return h.indexOf(n);",
    "const h = 'a'.repeat(4e6), n = 'a'.repeat(2e6) + 'b'; return h.lastIndexOf(n);",
    "const h = 'a'.repeat(4e6), n = 'a'.repeat(2e6) + 'b'; return h.includes(n);",
    "const h = 'a'.repeat(4e6), n = 'a'.repeat(2e6) + 'b'; return h.split(n).length;",
    "const h = 'a'.repeat(4e6), n = 'a'.repeat(2e6) + 'b'; return h.replaceAll(n, '').length;",
    "return String(Array(100).fill(2n ** 1000000n)).length;",
    "return Array(100).fill(0).map((x, i) => 2n ** 1000000n + BigInt(i)).sort().length;",
    "return Array(100).fill(2n ** 1000000n).join('').length;",
    "let s = 0; for (;;) s += String(2n ** 1000000n).length;",
    "const a = new Float64Array(1e6).map(Math.random); a.sort((x, y) => { for (let i = 0; i < 1e4; i++); return x - y; });",
    "const a = new Int32Array(1e6).map(() => Math.random() * 1e9); a.sort((x, y) => { for (let i = 0; i < 1e4; i++); return x - y; });",
    "const a = new Uint8Array(1e6).map(() => Math.random() * 255); a.sort((x, y) => { for (let i = 0; i < 1e4; i++); return x - y; });",
    "for (;;) {}",
];

fn cases() -> Vec<(String, String)> {
    let mut cases = Vec::new();
    for (call, length) in BUILT_INS {
        for (how, setup) in LENGTHS {
            let body = format!("{} return {call};", setup.replace("LEN", length));
            cases.push((format!("{call} with a {how} length"), body));
        }
    }
    for body in OTHERS {
        cases.push((body.to_string(), body.to_string()));
    }
    cases
}

async fn run_case(executor: &ProcessExecutor, name: &str, body: &str) -> Result<(), String> {
    let started = Instant::now();
    let code = format!("async () => {{ {body} }}");
    let result = run_on(executor, &code, TestHost::echo()).await;
    let elapsed = started.elapsed();
    let expected = format!(
        "Time limit: the code ran for more than {} ms",
        DEADLINE.as_millis()
    );
    match &result.end {
        PassEnd::Failed(m) if m.starts_with(&expected) && elapsed <= DEADLINE + LATE => Ok(()),
        other => Err(format!("{name}: ended with {other:?} after {elapsed:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runaway_ends_at_the_deadline_and_its_process_is_replaced() {
    let options = QuickJsOptions::default().with_wall_time(DEADLINE);
    let executor = process_executor(options, |p| p.with_warm(4)).await;
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for batch in cases.chunks(4) {
        let runs = batch
            .iter()
            .map(|(name, body)| run_case(&executor, name, body));
        failures.extend(join_all(runs).await.into_iter().filter_map(Result::err));
        // The processes that were killed are replaced: a trivial pass runs at once.
        let started = Instant::now();
        let result = run_on(&executor, "return 1 + 1", TestHost::echo()).await;
        assert_eq!(returned(&result), json!(2));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
