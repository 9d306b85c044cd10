//! Out of memory inside a built-in never hands the code a non-error: once an allocation is
//! refused for the memory limit the pass ends with the Memory limit message, even when the
//! code caught what the engine threw (which, when the engine could not make the error either,
//! was its internal `[uninitialized]` placeholder), and nothing it does after reaches the host.

mod common;

use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{failure, returned, run_with, TestHost};
use serde_json::json;

fn executor() -> QuickJsExecutor {
    QuickJsExecutor::new(QuickJsOptions::default().with_memory_limit(16 << 20))
}

/// Built-ins that allocate in C, each run on strings of growing length inside `try`.
const BUILT_INS: [&str; 7] = [
    "s.normalize('NFD')",
    "s.normalize('NFKC')",
    "s.localeCompare(s + 'a')",
    "s.toUpperCase()",
    "s.split('')",
    "JSON.stringify([s, s, s])",
    "s.repeat(3)",
];

#[tokio::test]
async fn a_caught_allocation_failure_ends_the_pass_with_the_memory_limit() {
    let executor = executor();
    for call in BUILT_INS {
        for seed in ["x", "é", "\u{1E9B}\u{0323}"] {
            let host = TestHost::echo();
            let code = format!(
                "async () => {{ const seen = []; for (let n = 1 << 16; n <= 1 << 24; n *= 2) {{ try {{ const s = {seed:?}.repeat(n); {call}; }} catch (e) {{ seen.push(String(e)); await tasks.create_task({{ error: String(e) }}); console.log(String(e)); }} }} return seen; }}"
            );
            let result = run_with(&executor, &code, host.clone()).await;
            let message = failure(&result);
            assert!(
                message.starts_with("Memory limit: "),
                "{call} on {seed:?}: {message}"
            );
            assert!(
                host.calls().is_empty(),
                "{call} on {seed:?}: {:?}",
                host.calls()
            );
            assert!(
                result.logs.is_empty(),
                "{call} on {seed:?}: {:?}",
                result.logs
            );
        }
    }
}

#[tokio::test]
async fn the_next_pass_runs_as_usual() {
    let executor = executor();
    let code = "async () => { try { 'é'.repeat(1 << 23).normalize('NFD') } catch (e) { return String(e) } }";
    let message = failure(&run_with(&executor, code, TestHost::echo()).await);
    assert!(message.starts_with("Memory limit: "), "{message}");
    let value = returned(
        &run_with(
            &executor,
            "async () => 'é'.normalize('NFD').length",
            TestHost::echo(),
        )
        .await,
    );
    assert_eq!(value, json!(2));
}
