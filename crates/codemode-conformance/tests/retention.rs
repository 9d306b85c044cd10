//! Retention never erases an approved write still applied while it is young: after 1,000
//! later trivial runs with `max_executions = 50`, it is still in the store, in the audit
//! read and rolled back by rollback. A write that needed no approval is kept the same way,
//! while a run that only read goes. On SQLite, then on PostgreSQL (when a server answers).

use codemode::{EntryState, ExecutionStatus, Outcome, Runtime, Store};
use codemode_conformance::Probe;
use codemode_postgres::{PostgresStore, ScratchDatabase};
use codemode_sqlite::SqliteStore;
use std::sync::Arc;

async fn an_approved_write_outlives_1000_trivial_runs(store: Arc<dyn Store>) {
    let probe = Probe::default();
    let rt = Runtime::builder(
        store,
        Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default())),
    )
    .connector(probe.connector("probe"))
    .max_executions(50)
    .build()
    .unwrap();
    let since = codemode::now_ms();
    let paused = rt
        .call("async () => { await probe.gated_write({ value: 7 }); return 'written' }")
        .await
        .unwrap();
    assert!(matches!(paused, Outcome::Paused { .. }), "{paused:?}");
    let id = paused.execution_id().to_string();
    let done = rt.approve(&id).await.unwrap();
    assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
    for _ in 0..1_000 {
        let out = rt.call("async () => 1").await.unwrap();
        assert!(matches!(out, Outcome::Completed { .. }), "{out:?}");
    }
    let listed = rt.execution_summaries(None, None, 500).await.unwrap();
    // The prune runs as each run starts: 50 finished runs then, the last run, the write.
    assert_eq!(listed.len(), 52, "the newest 51 and the approved write");
    assert_eq!(listed[51].id, id);
    let audit = rt.audit_executions(since, i64::MAX, 10).await.unwrap();
    let write = audit
        .iter()
        .find(|e| e.id == id)
        .expect("the write is audited");
    assert_eq!(write.log[0].method, "gated_write");
    assert_eq!(write.log[0].state, EntryState::Applied);
    assert_eq!(write.decisions.len(), 1, "its approval");
    let report = rt.rollback(&id).await.unwrap();
    assert_eq!(report.reverted, vec![0], "{report:?}");
    assert_eq!(
        rt.execution(&id).await.unwrap().unwrap().status,
        ExecutionStatus::RolledBack
    );
    // Rolled back, it is an ordinary finished run again: the next prune takes it.
    rt.call("async () => 1").await.unwrap();
    assert!(rt.execution(&id).await.unwrap().is_none());
}

async fn an_approval_free_write_outlives_later_runs(store: Arc<dyn Store>) {
    let probe = Probe::default();
    let rt = Runtime::builder(
        store,
        Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default())),
    )
    .connector(probe.connector("probe"))
    .max_executions(5)
    .build()
    .unwrap();
    let done = rt
        .call("async () => { await probe.write({ value: 7 }); return 'written' }")
        .await
        .unwrap();
    assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
    let id = done.execution_id().to_string();
    let read = rt
        .call("async () => { await probe.read({}); return 'read' }")
        .await
        .unwrap();
    assert!(matches!(read, Outcome::Completed { .. }), "{read:?}");
    let read_id = read.execution_id().to_string();
    for _ in 0..30 {
        let out = rt.call("async () => 1").await.unwrap();
        assert!(matches!(out, Outcome::Completed { .. }), "{out:?}");
    }
    let listed = rt.execution_summaries(None, None, 100).await.unwrap();
    assert_eq!(listed.len(), 7, "the newest 6 and the write: {listed:?}");
    assert_eq!(listed[6].id, id, "the write needing no approval is kept");
    assert!(
        rt.execution(&read_id).await.unwrap().is_none(),
        "a run that only read is pruned"
    );
    let kept = rt.execution(&id).await.unwrap().unwrap();
    assert!(!kept.log[0].requires_approval && !kept.log[0].read_only);
    let report = rt.rollback(&id).await.unwrap();
    assert_eq!(report.reverted, vec![0], "{report:?}");
    assert_eq!(probe.record().reverts, ["write#0"]);
    rt.call("async () => 1").await.unwrap();
    assert!(
        rt.execution(&id).await.unwrap().is_none(),
        "rolled back, the next prune takes it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_free_write_outlives_later_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("c.db")).unwrap();
    an_approval_free_write_outlives_later_runs(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_free_write_outlives_later_runs_on_postgres() {
    let Some(db) = ScratchDatabase::for_tests("retention_free_writes")
        .await
        .unwrap()
    else {
        return; // `for_tests` failed under CI, or said it skipped.
    };
    let store = PostgresStore::connect(db.url()).await.unwrap();
    an_approval_free_write_outlives_later_runs(Arc::new(store.clone())).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_write_outlives_1000_trivial_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("c.db")).unwrap();
    an_approved_write_outlives_1000_trivial_runs(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_write_outlives_1000_trivial_runs_on_postgres() {
    let Some(db) = ScratchDatabase::for_tests("retention_writes")
        .await
        .unwrap()
    else {
        return; // `for_tests` failed under CI, or said it skipped.
    };
    let store = PostgresStore::connect(db.url()).await.unwrap();
    an_approved_write_outlives_1000_trivial_runs(Arc::new(store.clone())).await;
    store.close();
}
