//! A thread's runtime is put back as it was made after every pass: whatever a pass did to its
//! globals, built-ins and heap, however it ended, the next pass on that thread sees none of it.
//! Each case runs on one sandbox thread (and once on the caller's thread): the fingerprint of
//! the environment after the case must equal the one a new runtime gives.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use std::sync::Arc;

use codemode::{ExecuteRequest, Executor, HostReply};
use common::*;
use proptest::prelude::*;
use serde_json::{json, Value};

use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};

/// What a pass can see of its environment: globals and their kinds, the shape of the main
/// built-ins, and settings a pass could change.
const FINGERPRINT: &str = r#"async () => {
  const shape = (o) => Reflect.ownKeys(o).map((k) => {
    const d = Object.getOwnPropertyDescriptor(o, k);
    return `${String(k)}:${typeof d.value}:${!!d.writable}${!!d.enumerable}${!!d.configurable}:${!!d.get}`;
  }).sort().join(",");
  const a = [];
  a.push(1, 2);
  return {
    globals: shape(globalThis),
    object: shape(Object.prototype),
    array: shape(Array.prototype),
    func: shape(Function.prototype),
    error: shape(Error.prototype) + "|" + shape(Error),
    promise: shape(Promise.prototype),
    json: JSON.stringify(JSON.parse('{"a":[1,2]}')),
    frozen: [Object.isFrozen(Object.prototype), Object.isExtensible(globalThis), Object.isFrozen(Math)],
    pushed: a.length,
    polluted: ({}).polluted ?? null,
    limit: Error.stackTraceLimit,
    prepare: typeof Error.prepareStackTrace,
    math: typeof Math.max + Math.max(1, 2),
    console: typeof console.log,
    tasks: typeof tasks.list_tasks,
    symbol: Symbol.keyFor(Symbol.for("left-by-a-pass")),
    stack: new Error("x").stack.split("\n").length,
  };
}"#;

/// Passes that change what they can, each ending its own way.
const CASES: [(&str, &str); 14] = [
    ("globals and prototypes", "async () => { globalThis.leak = 1; Object.prototype.polluted = 'yes'; Array.prototype.push = () => 0; JSON.parse = () => 'hacked'; delete Math.max; return 1; }"),
    ("error settings", "async () => { Error.stackTraceLimit = 0; Error.prepareStackTrace = () => 'mine'; Error.prototype.name = 'Mine'; return 1; }"),
    ("frozen built-ins", "async () => { Object.freeze(Object.prototype); Object.freeze(Math); Object.preventExtensions(globalThis); return 1; }"),
    ("redefined globals", "async () => { Object.defineProperty(globalThis, 'JSON', { get() { throw new Error('no'); } }); globalThis.console = null; return 1; }"),
    ("a job left queued", "async () => { Promise.resolve().then(() => { globalThis.late = 1; Object.prototype.later = 1; }); return 1; }"),
    ("a call left in flight", "async () => { tasks.list_tasks().then(() => { globalThis.after = 1; }); return 1; }"),
    ("a registered symbol and finaliser", "async () => { Symbol.for('left-by-a-pass'); new FinalizationRegistry(() => { globalThis.fin = 1; }).register({}, 1); new WeakRef({}); return 1; }"),
    ("a thrown error", "async () => { globalThis.leak = 2; throw new Error('boom'); }"),
    ("a syntax error", "async () => { globalThis.leak = 3; return 1 +; }"),
    ("the deadline", "async () => { globalThis.leak = 4; Object.prototype.polluted = 1; while (true) {} }"),
    ("the memory limit", "async () => { globalThis.big = []; while (true) big.push('x'.repeat(4096) + big.length); }"),
    ("the console limit", "async () => { globalThis.leak = 5; while (true) console.log('x'.repeat(1000)); }"),
    ("a deep recursion", "async () => { globalThis.leak = 6; const f = (n) => f(n + 1) + 1; return f(0); }"),
    ("a promise never settled", "async () => { globalThis.leak = 7; await new Promise(() => {}); }"),
];

fn options() -> QuickJsOptions {
    QuickJsOptions::default()
        .with_wall_time(Duration::from_secs(1))
        .with_memory_limit(32 * 1024 * 1024)
        .with_max_console_bytes(64 * 1024)
        .with_max_threads(1)
}

async fn fingerprint(executor: &QuickJsExecutor) -> Value {
    returned(&run_with(executor, FINGERPRINT, TestHost::echo()).await)
}

async fn every_case_leaves_nothing(executor: QuickJsExecutor) {
    let made = fingerprint(&QuickJsExecutor::new(options())).await;
    assert_eq!(made["pushed"], json!(2), "{made}");
    for (name, code) in CASES {
        let _ = run_with(&executor, code, TestHost::echo()).await;
        let after = fingerprint(&executor).await;
        assert_eq!(after, made, "after {name}");
    }
}

#[tokio::test]
async fn nothing_a_pass_does_reaches_the_next_pass_on_its_thread() {
    every_case_leaves_nothing(QuickJsExecutor::new(options())).await;
}

#[tokio::test]
async fn nothing_a_pass_does_reaches_the_next_pass_on_the_callers_thread() {
    every_case_leaves_nothing(QuickJsExecutor::new(options().with_caller_thread(true))).await;
}

#[tokio::test]
async fn math_random_is_new_in_every_pass() {
    let executor = QuickJsExecutor::new(options());
    let code = "async () => [Math.random(), Math.random()]";
    let mut seen = HashSet::new();
    for _ in 0..20 {
        let pair = returned(&run_with(&executor, code, TestHost::echo()).await);
        assert!(seen.insert(pair.to_string()), "a pass repeated {pair}");
    }
}

#[tokio::test]
async fn memory_a_pass_used_is_free_again_for_the_next() {
    // Time enough for a debug build on a busy machine: the limit here is memory.
    let executor = QuickJsExecutor::new(options().with_wall_time(Duration::from_secs(20)));
    // About 20 MiB each, within the 32 MiB limit: a pass that kept any of it would fail.
    let code = "async () => { const a = []; for (let i = 0; i < 5000; i++) a.push('x'.repeat(4000) + i); return a.length; }";
    for pass in 0..15 {
        let result = run_with(&executor, code, TestHost::echo()).await;
        assert_eq!(returned(&result), json!(5000), "pass {pass}");
    }
    // And after a pass that hit the limit.
    let over = "async () => { const a = []; while (true) a.push('x'.repeat(4096) + a.length); }";
    let stopped = failure(&run_with(&executor, over, TestHost::echo()).await);
    assert!(stopped.starts_with("Memory limit"), "{stopped}");
    assert_eq!(
        returned(&run_with(&executor, code, TestHost::echo()).await),
        json!(5000)
    );
}

#[tokio::test]
async fn a_host_reply_after_the_pass_ended_reaches_nothing() {
    // The host answers late; the pass has returned and its runtime been put back already.
    let executor = QuickJsExecutor::new(options());
    let host = TestHost::new(|_| HostReply::Value(json!({"late": true})));
    let code = "async () => { tasks.list_tasks().then((r) => { globalThis.got = r; }); return 1; }";
    for _ in 0..5 {
        assert_eq!(
            returned(&run_with(&executor, code, host.clone()).await),
            json!(1)
        );
        let seen = returned(&run_with(&executor, "async () => typeof got", host.clone()).await);
        assert_eq!(seen, json!("undefined"));
    }
}

/// Pieces of passes: each changes something, holds memory, or ends the pass its own way.
const STEPS: [&str; 16] = [
    "globalThis.leak = 1;",
    "Object.prototype.polluted = 'yes';",
    "Array.prototype.push = function () { return 0; };",
    "delete Math.max;",
    "Error.stackTraceLimit = 0;",
    "Object.freeze(Array.prototype);",
    "Symbol.for('left-by-a-pass');",
    "Promise.resolve().then(() => { globalThis.late = 1; });",
    "tasks.list_tasks().then(() => { Object.prototype.after = 1; });",
    "globalThis.keep = new Array(200000).fill('x');",
    "globalThis.bytes = new Uint8Array(3 << 20);",
    "{ const s = []; for (let i = 0; i < 2000; i++) s.push({ i, t: 'v' + i }); globalThis.objects = s; }",
    "throw new Error('ends here');",
    "while (true) {}",
    "await new Promise(() => {});",
    "{ const f = (n) => f(n + 1) + 1; f(0); }",
];

/// Passes made of any steps, in any order, on one thread: after them the next pass sees the
/// environment a new runtime gives.
#[test]
fn passes_made_of_any_steps_leave_nothing_behind() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let executor = QuickJsExecutor::new(options().with_wall_time(Duration::from_millis(200)));
    let made = runtime.block_on(fingerprint(&QuickJsExecutor::new(options())));
    let config = ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(24),
        ..ProptestConfig::default()
    };
    let pass = proptest::collection::vec(0..STEPS.len(), 1..5);
    proptest!(config, |(passes in proptest::collection::vec(pass, 1..4))| {
        for steps in &passes {
            let body: String = steps.iter().map(|&i| STEPS[i]).collect();
            let code = format!("async () => {{ {body} return 1; }}");
            let _ = runtime.block_on(run_with(&executor, &code, TestHost::echo()));
        }
        let after = runtime.block_on(fingerprint(&executor));
        prop_assert_eq!(after, made.clone(), "after {:?}", passes);
    });
}

/// Many threads at once, each with its own runtime: no pass sees another's globals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_passes_on_many_threads_see_only_their_own_globals() {
    let executor = Arc::new(QuickJsExecutor::new(
        options()
            .with_max_threads(8)
            .with_wall_time(Duration::from_secs(10)),
    ));
    let code = "async () => { const seen = typeof leak; globalThis.leak = 1; await tasks.list_tasks(); Object.prototype.polluted = 1; await tasks.get(); return [seen, typeof leak]; }";
    let runs: Vec<_> = (0..200)
        .map(|_| {
            let executor = executor.clone();
            tokio::spawn(async move {
                executor
                    .execute(
                        ExecuteRequest {
                            code: code.to_string(),
                            namespaces: namespaces(),
                            clock: Default::default(),
                        },
                        TestHost::echo(),
                    )
                    .await
            })
        })
        .collect();
    for run in runs {
        let result = run.await.unwrap();
        assert_eq!(returned(&result), json!(["undefined", "number"]));
    }
}
