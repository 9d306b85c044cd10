//! Every limit ends the pass with a clear error, and one runaway pass delays no other.

mod common;

use std::time::{Duration, Instant};

use codemode::{Host, HostCall, HostReply, PassEnd};
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{failure, returned, run_with, TestHost};
use futures::future::BoxFuture;
use std::sync::Arc;

/// A host whose calls never answer.
struct SilentHost;

impl Host for SilentHost {
    fn call(&self, _call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(futures::future::pending())
    }
}

fn short(wall_ms: u64) -> QuickJsExecutor {
    QuickJsExecutor::new(QuickJsOptions::default().with_wall_time(Duration::from_millis(wall_ms)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_is_stopped_while_another_pass_completes_on_time() {
    let executor = Arc::new(short(1_500));
    let looping = {
        let executor = executor.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = run_with(
                &executor,
                "async () => { while (true) {} }",
                TestHost::echo(),
            )
            .await;
            (result, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let quick = run_with(
        &executor,
        "async () => { let s = 0; for (let i = 0; i < 1000; i++) s += i; return s; }",
        TestHost::echo(),
    )
    .await;
    let quick_time = started.elapsed();
    assert_eq!(returned(&quick), serde_json::json!(499500));
    assert!(
        quick_time < Duration::from_millis(500),
        "the quick pass took {quick_time:?}"
    );
    let (result, elapsed) = looping.await.unwrap();
    assert!(
        failure(&result).starts_with("Time limit"),
        "{:?}",
        result.end
    );
    assert!(elapsed >= Duration::from_millis(1_400), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(4_000), "{elapsed:?}");
}

#[tokio::test]
async fn the_interrupt_cannot_be_caught() {
    let code = "async () => { try { while (true) {} } catch (e) { return 'caught'; } finally { return 'finally'; } }";
    let result = run_with(&short(300), code, TestHost::echo()).await;
    assert!(failure(&result).starts_with("Time limit"));
}

#[tokio::test]
async fn waiting_on_the_host_past_the_deadline_is_stopped() {
    let started = Instant::now();
    let result = run_with(
        &short(300),
        "async () => await tasks.get({})",
        Arc::new(SilentHost),
    )
    .await;
    assert!(failure(&result).starts_with("Time limit"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_promise_nothing_will_settle_is_reported() {
    let result = run_with(
        &short(5_000),
        "async () => await new Promise(() => {})",
        TestHost::echo(),
    )
    .await;
    assert!(failure(&result).contains("nothing will ever settle"));
}

#[tokio::test]
async fn memory_is_limited() {
    let executor = QuickJsExecutor::new(
        QuickJsOptions::default()
            .with_memory_limit(16 * 1024 * 1024)
            .with_wall_time(Duration::from_secs(20)),
    );
    let code =
        "async () => { const keep = []; while (true) keep.push(new Array(100000).fill(1)); }";
    let result = run_with(&executor, code, TestHost::echo()).await;
    let message = failure(&result);
    assert!(message.starts_with("Memory limit"), "{message}");
    assert!(message.contains("16 MiB"), "{message}");
}

#[tokio::test]
async fn catching_the_memory_error_does_not_keep_the_code_running() {
    let executor = QuickJsExecutor::new(
        QuickJsOptions::default()
            .with_memory_limit(16 * 1024 * 1024)
            .with_wall_time(Duration::from_secs(20)),
    );
    let code = r#"async () => {
        const keep = [];
        for (let round = 0; round < 1000; round++) {
            try {
                while (true) keep.push(new Array(100000).fill(round));
            } catch (e) {
                console.log("caught " + e.message);
                keep.length = keep.length > 10 ? keep.length - 10 : 0;
            }
        }
        return "survived";
    }"#;
    let result = run_with(&executor, code, TestHost::echo()).await;
    let message = failure(&result);
    assert!(message.starts_with("Memory limit"), "{message}");
    assert!(message.contains("16 MiB"), "{message}");
}

#[tokio::test]
async fn a_large_string_hits_the_memory_limit() {
    let executor =
        QuickJsExecutor::new(QuickJsOptions::default().with_memory_limit(8 * 1024 * 1024));
    let result = run_with(
        &executor,
        "async () => 'x'.repeat(64 * 1024 * 1024).length",
        TestHost::echo(),
    )
    .await;
    assert!(failure(&result).starts_with("Memory limit"));
}

#[tokio::test]
async fn stack_depth_is_limited() {
    let executor = QuickJsExecutor::new(QuickJsOptions::default().with_max_stack_size(256 * 1024));
    let code = "function down(n) { return down(n + 1) + 1; }\nreturn down(0);";
    let message = failure(&run_with(&executor, code, TestHost::echo()).await);
    assert!(message.starts_with("Stack limit"), "{message}");
    assert!(message.contains("256 KiB"), "{message}");
}

#[tokio::test]
async fn console_output_is_capped_and_ends_the_pass() {
    let executor = QuickJsExecutor::new(QuickJsOptions::default().with_max_console_bytes(1_000));
    let code = "async () => { for (let i = 0; i < 1000; i++) { try { console.log('line ' + i + ' '.repeat(50)); } catch (e) {} } return 'done'; }";
    let result = run_with(&executor, code, TestHost::echo()).await;
    assert!(failure(&result).starts_with("Console limit"));
    let last = result.logs.last().unwrap();
    assert!(last.contains("console output truncated"), "{last}");
    let kept: usize = result.logs[..result.logs.len() - 1]
        .iter()
        .map(String::len)
        .sum();
    assert!(kept <= 1_000, "{kept}");
}

#[tokio::test]
async fn code_size_is_limited() {
    let executor = QuickJsExecutor::new(QuickJsOptions::default().with_max_code_bytes(100));
    let code = format!("return {};", "1 + ".repeat(50) + "1");
    let message = failure(&run_with(&executor, &code, TestHost::echo()).await);
    assert!(message.contains("more than the limit of 100"), "{message}");
}

#[tokio::test]
async fn a_dropped_execution_is_cancelled() {
    let executor = short(60_000);
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_millis(200),
        run_with(
            &executor,
            "async () => { while (true) {} }",
            TestHost::echo(),
        ),
    )
    .await;
    assert!(outcome.is_err());
    // The pass thread is freed: a new pass on a one-thread executor runs at once.
    let _ = started;
    let single = QuickJsExecutor::new(QuickJsOptions::default().with_max_threads(1));
    let first = tokio::time::timeout(
        Duration::from_millis(200),
        run_with(&single, "async () => { while (true) {} }", TestHost::echo()),
    )
    .await;
    assert!(first.is_err());
    let second = tokio::time::timeout(
        Duration::from_secs(5),
        run_with(&single, "async () => 7", TestHost::echo()),
    )
    .await
    .expect("the cancelled pass must free its thread");
    assert_eq!(second.end, PassEnd::Returned(serde_json::json!(7)));
}
