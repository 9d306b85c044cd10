//! A pass waiting for a host reply in a sandbox process stops by itself at a cancel (a
//! signal that interrupts its read) and at its deadline (a tick): the process is not killed
//! and serves the next pass. Alone in its test binary, so that its only children are this
//! executor's processes.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode::{Host, HostCall, HostReply};
use codemode_quickjs::QuickJsOptions;
use common::{failure, process_executor, returned, run_on, TestHost};
use futures::future::BoxFuture;
use serde_json::json;

/// A host whose calls answer after 20 s, with a stop flag.
struct StuckHost {
    stop: Arc<AtomicBool>,
}

impl Host for StuckHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(20)).await;
            HostReply::Value(call.args)
        })
    }

    fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        Some(self.stop.clone())
    }
}

/// This test process's children (the sandbox processes).
fn children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let parent = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(str::trim);
        if parent == Some(me.as_str()) {
            found.push(pid);
        }
    }
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_waiting_for_the_host_stops_itself_at_a_cancel_and_at_its_deadline() {
    // A process that did not stop by itself would be killed only after 10 s.
    let options = QuickJsOptions::default().with_wall_time(Duration::from_millis(1500));
    let executor = process_executor(options, |mut p| {
        p.kill_grace = Duration::from_secs(10);
        p.cancel_grace = Duration::from_secs(10);
        p.with_warm(1)
    })
    .await;
    let before = children();
    assert_eq!(before.len(), 1, "{before:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let host = Arc::new(StuckHost { stop: stop.clone() });
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let result = run_on(&executor, "const r = await tasks.get({}); return r;", host).await;
    assert_eq!(
        failure(&result),
        "The execution was cancelled by the caller."
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    let host = Arc::new(StuckHost {
        stop: Arc::new(AtomicBool::new(false)),
    });
    let started = Instant::now();
    let result = run_on(&executor, "const r = await tasks.get({}); return r;", host).await;
    assert!(
        failure(&result).starts_with("Time limit"),
        "{}",
        failure(&result)
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // The same process ran both passes and runs the next.
    let after = run_on(&executor, "return 7", TestHost::echo()).await;
    assert_eq!(returned(&after), json!(7));
    assert_eq!(children(), before);
}
