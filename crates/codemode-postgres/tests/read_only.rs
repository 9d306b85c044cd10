//! Whether a log entry's tool was read-only: a version 10 database gains the flag on
//! connect, its entries and archived records read as writes (the safe side), and pruning
//! keeps a recent run holding one.

mod common;

use codemode::{Commit, Deletion, EntryState, ExecutionStatus, Store, Transition};
use codemode_postgres::PostgresStore;
use common::{entry, execution, lease};

/// Inserts `id` with one applied read-only entry and completes it.
async fn finished_read(store: &dyn Store, id: &str, at: i64) {
    let mut e = execution(id, at);
    let mut call = entry(0, EntryState::Applied);
    call.read_only = true;
    e.log = vec![call];
    store
        .insert_execution("rt", &e, &lease("n", i64::MAX / 2), 50)
        .await
        .unwrap();
    let done = Commit {
        execution_id: id.into(),
        owner: Some("n".into()),
        entries: Vec::new(),
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Completed,
            at + 1,
        )),
        clock: None,
    };
    assert!(store.commit("rt", &done).await.unwrap());
}

#[tokio::test]
async fn entries_of_a_version_10_database_read_as_writes_and_keep_their_run() {
    let (db, store) = setup_or_skip!("read_only_version_10");
    let now = codemode::now_ms();
    finished_read(&store, "live", now - 1_000).await;
    finished_read(&store, "gone", now - 900).await;
    let live = store.execution("rt", "live").await.unwrap().unwrap();
    assert!(live.log[0].read_only, "the flag reads back as written");
    assert_eq!(
        store.delete_execution("rt", "gone", now).await.unwrap(),
        Deletion::Deleted(ExecutionStatus::Completed)
    );
    let audit = store.audit_executions("rt", 0, i64::MAX, 10).await.unwrap();
    let archived = audit.iter().find(|e| e.id == "gone").expect("archived");
    assert!(archived.log[0].read_only, "the archive keeps the flag");
    store.close();
    let client = common::raw(db.url()).await;
    client
        .batch_execute(
            "ALTER TABLE codemode_log_entries DROP COLUMN read_only;
             ALTER TABLE codemode_audit_archive DROP COLUMN entry_read_onlys;
             ALTER TABLE codemode_executions DROP COLUMN clock;
             UPDATE codemode_schema_version SET version = 10;",
        )
        .await
        .unwrap();
    let store = PostgresStore::connect(db.url()).await.unwrap();
    let live = store.execution("rt", "live").await.unwrap().unwrap();
    assert!(
        !live.log[0].read_only,
        "an entry from before reads as a write"
    );
    let audit = store.audit_executions("rt", 0, i64::MAX, 10).await.unwrap();
    let archived = audit.iter().find(|e| e.id == "gone").expect("archived");
    assert!(!archived.log[0].read_only, "so does an archived one");
    assert_eq!(store.prune_executions("rt", 0).await.unwrap(), 0);
    assert!(store.execution("rt", "live").await.unwrap().is_some());
    let version: i64 = client
        .query_one("SELECT version FROM codemode_schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, codemode_postgres::SCHEMA_VERSION);
    store.close();
}
