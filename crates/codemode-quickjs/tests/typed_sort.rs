//! A typed array sorted with a slow comparator ends at the deadline. The engine sorts typed
//! arrays in C: once the interrupt stops the comparator, the C sort went on comparing every
//! remaining pair (millions of elements) before it returned, so the sandbox sorts long typed
//! arrays with a comparator in JavaScript, where the interrupt stops it at once.

mod common;

use std::time::{Duration, Instant};

use codemode::PassEnd;
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{returned, run_with, TestHost};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(1);
/// How long past the deadline a pass may take to end (thread hand-offs on a busy machine).
const MARGIN: Duration = Duration::from_millis(300);

fn executor() -> QuickJsExecutor {
    QuickJsExecutor::new(QuickJsOptions::default().with_wall_time(DEADLINE))
}

/// Fills `a` quickly (a JavaScript loop over millions of elements would itself take the
/// deadline in a debug build): 4096 values, then doubled natively.
const FILL: &str = "for (let i = 0; i < 4096; i++) a[i] = V(i * 7919 % 4093); for (let k = 4096; k < a.length; k *= 2) a.copyWithin(k, 0, k);";

/// Sorts, each with a comparator doing real work per comparison: `[array, value maker]`.
const SLOW_SORTS: [(&str, &str, &str); 4] = [
    ("new Int8Array(12e6)", "Number", "sort"),
    ("new Float64Array(3e6)", "Math.sin", "sort"),
    ("new Int32Array(4e6)", "Number", "toSorted"),
    ("new BigInt64Array(3e6)", "BigInt", "sort"),
];

#[tokio::test]
async fn a_long_typed_array_sort_with_a_comparator_ends_at_the_deadline() {
    let executor = executor();
    for (array, value, method) in SLOW_SORTS {
        let body = format!("const a = {array}; const V = {value}; {FILL} a.{method}((x, y) => {{ let s = 0; for (let i = 0; i < 20; i++) s += i; return x < y ? -1 : x > y ? 1 : 0; }});");
        let started = Instant::now();
        let result = run_with(
            &executor,
            &format!("async () => {{ {body} return 1; }}"),
            TestHost::echo(),
        )
        .await;
        let elapsed = started.elapsed();
        match &result.end {
            PassEnd::Failed(message) => {
                assert!(message.starts_with("Time limit"), "{body}: {message}")
            }
            other => panic!("{body}: ended {other:?}"),
        }
        assert!(
            elapsed < DEADLINE + MARGIN,
            "{body}: ended after {elapsed:?}"
        );
    }
}

#[tokio::test]
async fn typed_arrays_sort_as_the_standard_says() {
    // Past the length the engine sorts natively with a comparator, and below it.
    let code = r#"async () => {
        const out = {};
        for (const n of [10, 70000]) {
            const f = new Float64Array(n);
            for (let i = 0; i < n; i++) f[i] = ((i * 7919) % 1009) - 500 + (i % 3) / 4;
            const desc = f.slice().sort((a, b) => b - a);
            let ok = true;
            for (let i = 1; i < n; i++) if (desc[i - 1] < desc[i]) ok = false;
            const native = f.slice().sort().reverse();
            for (let i = 0; i < n; i++) if (!Object.is(native[i], desc[i])) ok = false;
            // Stable: equal keys keep their order.
            const keys = new Int32Array(n);
            for (let i = 0; i < n; i++) keys[i] = i;
            keys.sort((a, b) => (a % 4) - (b % 4));
            for (let i = 1; i < n; i++) {
                const x = keys[i - 1], y = keys[i];
                if (x % 4 > y % 4 || (x % 4 === y % 4 && x > y)) ok = false;
            }
            // A comparator that throws leaves the array as it was.
            const before = f.slice();
            let thrown = null;
            try { f.sort((a, b) => { if (a > 400) throw new Error("no"); return a - b; }); } catch (e) { thrown = e.message; }
            for (let i = 0; i < n; i++) if (!Object.is(before[i], f[i])) ok = false;
            // NaN and non-numbers from the comparator count as 0.
            const big = new BigInt64Array([3n, 1n, 2n]);
            const returnsSelf = big.sort((a, b) => (a < b ? -1 : 1)) === big;
            const toSorted = new Int32Array([3, 1, 2]).toSorted((a, b) => a - b);
            const nan = new Int32Array([3, 1, 2]).sort(() => NaN);
            out[n] = { ok, thrown, returnsSelf, toSorted: Array.from(toSorted), kind: toSorted.constructor.name, nan: Array.from(nan), big: big.join(",") };
        }
        let bad;
        try { new Int8Array(70000).sort("nope"); } catch (e) { bad = e.constructor.name; }
        out.bad = bad;
        return out;
    }"#;
    let roomy =
        QuickJsExecutor::new(QuickJsOptions::default().with_wall_time(Duration::from_secs(30)));
    let value = returned(&run_with(&roomy, code, TestHost::echo()).await);
    let each = json!({"ok": true, "thrown": "no", "returnsSelf": true, "toSorted": [1, 2, 3], "kind": "Int32Array", "nan": [3, 1, 2], "big": "1,2,3"});
    assert_eq!(
        value,
        json!({"10": each, "70000": each, "bad": "TypeError"})
    );
}
