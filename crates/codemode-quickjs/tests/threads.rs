//! Where passes run, and runtimes prepared ahead of time for the connectors of the latest pass.

mod common;

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use codemode::{ExecuteRequest, Executor, HostReply, Namespace};
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{failure, returned, run_with, TestHost};
use serde_json::json;

/// A host that records the thread each call is answered on.
fn thread_recorder() -> (Arc<TestHost>, Arc<Mutex<Vec<ThreadId>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let host = TestHost::new(move |_| {
        record.lock().unwrap().push(std::thread::current().id());
        HostReply::Value(json!(1))
    });
    (host, seen)
}

const ONE_CALL: &str = "return await tasks.get({})";

/// Runs one call through `executor`: the threads the call was answered on, and this thread.
async fn answered_on(executor: &QuickJsExecutor) -> (Vec<ThreadId>, ThreadId) {
    let (host, seen) = thread_recorder();
    let here = std::thread::current().id();
    let result = run_with(executor, ONE_CALL, host).await;
    assert_eq!(returned(&result), json!(1));
    let seen = seen.lock().unwrap().clone();
    (seen, here)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_caller_thread_a_pass_runs_on_the_calling_thread() {
    let executor = QuickJsExecutor::new(QuickJsOptions::default().with_caller_thread(true));
    let (seen, here) = answered_on(&executor).await;
    assert_eq!(seen, vec![here]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_pass_runs_on_a_sandbox_thread() {
    let executor = QuickJsExecutor::default();
    let (seen, here) = answered_on(&executor).await;
    assert_eq!(seen.len(), 1);
    assert_ne!(seen[0], here);
}

#[tokio::test(flavor = "current_thread")]
async fn caller_thread_falls_back_to_a_sandbox_thread_on_a_current_thread_runtime() {
    // block_in_place is not allowed here: the pass must go to the pool, not panic.
    let executor = QuickJsExecutor::new(QuickJsOptions::default().with_caller_thread(true));
    let (seen, here) = answered_on(&executor).await;
    assert_ne!(seen[0], here);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caller_thread_falls_back_when_the_stack_is_too_small_for_the_sandbox() {
    // A JavaScript stack larger than any worker's native stack: running it on the worker
    // could overflow, so the pass goes to a sandbox thread sized for it.
    let options = QuickJsOptions::default()
        .with_caller_thread(true)
        .with_max_stack_size(64 * 1024 * 1024);
    let executor = QuickJsExecutor::new(options);
    let (seen, here) = answered_on(&executor).await;
    assert_ne!(seen[0], here);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_caller_thread_the_time_limit_still_ends_a_runaway_pass() {
    let options = QuickJsOptions::default()
        .with_caller_thread(true)
        .with_wall_time(Duration::from_millis(200));
    let executor = QuickJsExecutor::new(options);
    let result = run_with(&executor, "while (true) {}", TestHost::echo()).await;
    assert!(failure(&result).contains("Time limit"), "{result:?}");
}

fn request(code: &str, namespaces: &[(&str, &[&str])]) -> ExecuteRequest {
    ExecuteRequest {
        code: code.to_string(),
        namespaces: namespaces
            .iter()
            .map(|(name, methods)| Namespace {
                name: name.to_string(),
                methods: methods.iter().map(|m| m.to_string()).collect(),
                ..Default::default()
            })
            .collect(),
        clock: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtimes_prepared_for_other_connectors_are_never_used() {
    for caller_thread in [false, true] {
        let executor =
            QuickJsExecutor::new(QuickJsOptions::default().with_caller_thread(caller_thread));
        let probe =
            "return [typeof alpha, typeof beta, Object.keys(globalThis.alpha ?? globalThis.beta)]";
        // Enough passes that the stock is refilled for `alpha` before the switch.
        for _ in 0..12 {
            let out = executor
                .execute(
                    request(probe, &[("alpha", &["one", "two"])]),
                    TestHost::echo(),
                )
                .await;
            assert_eq!(
                returned(&out),
                json!(["object", "undefined", ["one", "two"]])
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for _ in 0..12 {
            let out = executor
                .execute(request(probe, &[("beta", &["three"])]), TestHost::echo())
                .await;
            assert_eq!(returned(&out), json!(["undefined", "object", ["three"]]));
        }
        // A call goes to the namespace and method of this pass.
        let host = TestHost::echo();
        let out = executor
            .execute(
                request("return await beta.three({ x: 1 })", &[("beta", &["three"])]),
                host.clone(),
            )
            .await;
        assert_eq!(
            returned(&out),
            json!({"namespace": "beta", "method": "three", "args": {"x": 1}})
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_namespace_is_reported_and_does_not_spoil_later_passes() {
    let executor = QuickJsExecutor::default();
    let out = executor
        .execute(
            request("return 1", &[("console", &["log"])]),
            TestHost::echo(),
        )
        .await;
    assert!(failure(&out).contains("console"), "{out:?}");
    let out = executor
        .execute(request("return 2", &[("gamma", &["go"])]), TestHost::echo())
        .await;
    assert_eq!(returned(&out), json!(2));
}

/// A host whose every call completes only after a tokio timer fires.
struct TimerHost;

impl codemode::Host for TimerHost {
    fn call(&self, _call: codemode::HostCall) -> futures::future::BoxFuture<'_, HostReply> {
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            HostReply::Value(json!("late"))
        })
    }
}

/// An executor running passes inline on the caller's worker, with a time limit of `limit`.
fn inline_executor(limit: Duration) -> Arc<QuickJsExecutor> {
    let options = QuickJsOptions::default()
        .with_caller_thread(true)
        .with_wall_time(limit);
    Arc::new(QuickJsExecutor::new(options))
}

// In these two, the pass runs in a task on the runtime's only worker (the test body itself
// runs on another thread, in `block_on`).

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_inline_pass_waiting_on_the_runtime_lets_the_only_worker_go() {
    // The host's timer is driven by the worker: had the pass kept it while waiting, the
    // timer could never fire and the pass would run into its time limit.
    let executor = inline_executor(Duration::from_secs(5));
    let pass = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let result = run_with(&executor, ONE_CALL, Arc::new(TimerHost)).await;
        (result, started.elapsed())
    });
    let (result, took) = pass.await.unwrap();
    assert_eq!(returned(&result), json!("late"));
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_long_inline_pass_lets_the_only_worker_go() {
    let executor = inline_executor(Duration::from_secs(3));
    let (tick_tx, tick_rx) = std::sync::mpsc::channel();
    let started = std::time::Instant::now();
    let pass = tokio::spawn(async move {
        // A task queued on this worker, due while the runaway pass runs.
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = tick_tx.send(std::time::Instant::now());
        });
        run_with(&executor, "while (true) {}", TestHost::echo()).await
    });
    let result = pass.await.unwrap();
    assert!(failure(&result).contains("Time limit"), "{result:?}");
    let ticked = tick_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the other task ran");
    assert!(
        ticked.duration_since(started) < Duration::from_secs(2),
        "the other task waited {:?} for the runaway pass",
        ticked.duration_since(started)
    );
}
