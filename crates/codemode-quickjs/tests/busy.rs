//! Runaway passes never hold every request worker: with as many `while (true) {}` passes
//! running as there are cores, a trivial run still completes fast.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{failure, returned, run_with, TestHost};
use serde_json::json;

/// Trivial runs measured while the runaways run (`CODEMODE_BUSY_RUNS` overrides).
fn runs() -> usize {
    std::env::var("CODEMODE_BUSY_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Starts `count` runaway passes and returns once each has begun looping.
async fn start_runaways(
    executor: &Arc<QuickJsExecutor>,
    count: usize,
) -> Vec<tokio::task::JoinHandle<String>> {
    let host = TestHost::echo();
    let handles: Vec<_> = (0..count)
        .map(|_| {
            let executor = executor.clone();
            let host = host.clone();
            tokio::spawn(async move {
                let code = "async () => { await tasks.get({}); while (true) {} }";
                failure(&run_with(&executor, code, host).await)
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while host.calls().len() < count {
        assert!(Instant::now() < deadline, "the runaways did not start");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    handles
}

/// p50 and p99 of the trivial runs' latencies, measured while the runaways run.
async fn trivial_latencies(executor: &QuickJsExecutor) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(runs());
    for i in 0..runs() {
        let started = Instant::now();
        let result = run_with(executor, "async () => 1 + 1", TestHost::echo()).await;
        times.push(started.elapsed());
        assert_eq!(returned(&result), json!(2), "run {i}");
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}

async fn check(caller_thread: bool) {
    let executor = Arc::new(QuickJsExecutor::new(
        QuickJsOptions::default()
            .with_wall_time(Duration::from_secs(8))
            .with_caller_thread(caller_thread),
    ));
    // Warm the stock and the code cache, so the figures are of passes, not first runs.
    let (idle_p50, idle_p99) = trivial_latencies(&executor).await;
    println!("caller_thread={caller_thread}: no runaways: p50 {idle_p50:?}, p99 {idle_p99:?}");
    let runaways = start_runaways(&executor, cores()).await;
    // 10 ms, or twice the p99 without runaways when the machine's own load (others' work on a
    // shared machine) already takes it near that. A round spoiled by that load is retried.
    let bound = Duration::from_millis(10).max(idle_p99 * 2);
    let mut best = Duration::MAX;
    for round in 1..=3 {
        let started = Instant::now();
        let (p50, p99) = trivial_latencies(&executor).await;
        let during = runaways.iter().all(|h| !h.is_finished());
        println!(
            "caller_thread={caller_thread}: {} runaways, round {round}: {} trivial runs in {:?}: p50 {p50:?}, p99 {p99:?}",
            cores(),
            runs(),
            started.elapsed()
        );
        assert!(
            during,
            "the runaways ended before the round did: raise the wall time"
        );
        best = best.min(p99);
        if best < bound {
            break;
        }
    }
    assert!(best < bound, "p99 {best:?} (without runaways {idle_p99:?})");
    for handle in runaways {
        if caller_thread {
            // A pass on the caller's thread is not cancelled by dropping it: it runs to its limit.
            let end = handle.await.unwrap();
            assert!(end.starts_with("Time limit"), "{end}");
        } else {
            // Dropping the call cancels a pass on a sandbox thread.
            handle.abort();
        }
    }
}

/// One test for both modes: run side by side, their runaways would double.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_as_many_runaways_as_cores_a_trivial_run_stays_fast() {
    check(true).await;
    check(false).await;
}
