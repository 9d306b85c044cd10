//! Waiting for and watching executions, and a cancel made by another node: rules a
//! scenario file cannot express (several tasks, the event stream).

use codemode::{Actor, ExecutionStatus, Outcome, Runtime, RuntimeEvent, Store, EVENT_BUFFER};
use codemode_conformance::Probe;
use codemode_sqlite::SqliteStore;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

const DEADLINE: Duration = Duration::from_secs(20);

fn runtime(store: Arc<dyn Store>, probe: &Probe) -> Runtime {
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    Runtime::builder(store, executor)
        .connector(probe.connector("probe"))
        .build()
        .unwrap()
}

fn open(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(dir.path().join("codemode.db")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_returns_when_another_task_approves() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(open(&dir), &Probe::default());
    let paused = rt
        .call("async () => { await probe.gated_write({ value: 1 }); return 'done' }")
        .await
        .unwrap();
    let id = paused.execution_id().to_string();
    // A short wait on a pause that nobody decides returns the pause when it times out.
    let still = rt.wait(&id, Duration::from_millis(50)).await.unwrap();
    assert_eq!(still.status, ExecutionStatus::Paused);

    let waiter = {
        let rt = rt.clone();
        let id = id.clone();
        tokio::spawn(async move { rt.wait(&id, DEADLINE).await })
    };
    let approved = rt.approve(&id).await.unwrap();
    assert!(
        matches!(approved, Outcome::Completed { .. }),
        "{approved:?}"
    );
    let seen = tokio::time::timeout(DEADLINE, waiter)
        .await
        .expect("wait did not return")
        .unwrap()
        .unwrap();
    assert_eq!(seen.status, ExecutionStatus::Completed);
    assert_eq!(seen.result, Some(serde_json::json!("done")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_see_calls_and_console_lines_as_they_happen_then_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(open(&dir), &Probe::default());
    let mut events = rt.subscribe();
    let done = rt
        .call(
            "async () => { await probe.write({ value: 1 }); console.log('between'); await probe.read({}); return 1 }",
        )
        .await
        .unwrap();
    let id = done.execution_id();
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(DEADLINE, events.recv())
            .await
            .expect("no event")
            .unwrap();
        assert_eq!(event.execution_id(), id);
        let end = matches!(
            event,
            RuntimeEvent::StatusChanged {
                status: ExecutionStatus::Completed,
                ..
            }
        );
        seen.push(match event {
            RuntimeEvent::StatusChanged { status, .. } => format!("status {status}"),
            RuntimeEvent::CallStarted { seq, method, .. } => format!("start {method}#{seq}"),
            RuntimeEvent::CallEnded {
                seq, method, ok, ..
            } => format!("end {method}#{seq} {ok}"),
            RuntimeEvent::Console { line, .. } => format!("console {line}"),
            RuntimeEvent::PendingCreated { .. } => "pending".into(),
        });
        if end {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            "status running",
            "start write#0",
            "end write#0 true",
            "console between",
            "start read#1",
            "end read#1 true",
            "status completed",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_reads_lags_instead_of_growing() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(open(&dir), &Probe::default());
    let mut idle = rt.subscribe();
    let calls = EVENT_BUFFER; // two events each: twice what the channel holds
    let done = rt
        .call(&format!(
            "async () => {{ for (let i = 0; i < {calls}; i++) await probe.read({{ i }}); return 1 }}"
        ))
        .await
        .unwrap();
    assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
    match idle.recv().await {
        Err(RecvError::Lagged(skipped)) => assert!(skipped >= calls as u64, "{skipped}"),
        other => panic!("expected a lag, got {other:?}"),
    }
    // What is still held is at most the channel's capacity: the newest events.
    let mut held = 0;
    while idle.try_recv().is_ok() {
        held += 1;
    }
    assert!(held <= EVENT_BUFFER, "{held} events held");
}

/// Two runtimes (nodes) share one store: a cancel on the node that does not run the pass
/// takes the execution in the store, and the running pass stops at its next commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_from_another_node_stops_the_pass_at_its_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let probe = Probe::default();
    let runner = runtime(store.clone(), &probe);
    let other = runtime(store, &probe);
    let mut events = runner.subscribe();
    let call = {
        let runner = runner.clone();
        tokio::spawn(async move {
            runner
                .call("async () => { for (let i = 0; ; i++) { await probe.write({ value: i }); await probe.slow({ ms: 5 }) } }")
                .await
        })
    };
    let id = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Ok(RuntimeEvent::CallStarted { execution_id, .. }) = events.recv().await {
                return execution_id;
            }
        }
    })
    .await
    .expect("no call started");
    let cancelled = other.cancel(&id, Actor::new("bob")).await.unwrap();
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    assert_eq!(cancelled.decisions.len(), 1);
    assert_eq!(cancelled.decisions[0].by, Actor::new("bob"));
    let outcome = tokio::time::timeout(DEADLINE, call)
        .await
        .expect("the pass did not stop")
        .unwrap()
        .unwrap();
    let Outcome::Error { error, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(error.contains("cancelled by bob"), "{error}");
    let after = runner.execution(&id).await.unwrap().unwrap();
    assert_eq!(after.status, ExecutionStatus::Cancelled);
}

/// A cancel stops a pass that runs JavaScript without ever calling the host: the sandbox
/// polls the pass's stop flag at instruction boundaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_stops_a_pure_javascript_loop() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let rt = runtime(open(&dir), &probe);
    let mut events = rt.subscribe();
    let call = {
        let rt = rt.clone();
        tokio::spawn(async move {
            rt.call("async () => { await probe.write({ value: 1 }); console.log('looping'); for (;;) {} }")
                .await
        })
    };
    // The console line arrives while the pass still runs: the loop has begun.
    let id = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Ok(RuntimeEvent::Console { execution_id, line }) = events.recv().await {
                assert_eq!(line, "looping");
                return execution_id;
            }
        }
    })
    .await
    .expect("no console line while the pass ran");
    let asked = std::time::Instant::now();
    let cancelled = rt.cancel(&id, Actor::new("carol")).await.unwrap();
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    let outcome = tokio::time::timeout(DEADLINE, call)
        .await
        .expect("the loop did not stop")
        .unwrap()
        .unwrap();
    // Well before the 30 s wall-time limit would have ended it.
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    let Outcome::Error { error, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(error.contains("cancelled by carol"), "{error}");
    let after = rt.execution(&id).await.unwrap().unwrap();
    assert_eq!(after.status, ExecutionStatus::Cancelled);
    // What it applied stays in the log, for a rollback.
    assert_eq!(after.log.len(), 1);
    assert_eq!(probe.record().runs.get("write"), Some(&1));
}
