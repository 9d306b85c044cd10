//! The demo's tasks beside a real store: in the store's SQLite file on a connection of their
//! own, and in the store's PostgreSQL database on a pool of their own.

use codemode::{Execution, ExecutionStatus, Lease, Store};
use codemode_demo::{PgTasks, TaskDb, Tasks};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use codemode_sqlite::SqliteStore;
use serde_json::Value;
use std::sync::Arc;

fn execution(id: &str) -> Execution {
    Execution {
        id: id.to_string(),
        code: "async () => 1".into(),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: Vec::new(),
        connectors: vec!["tasks".into()],
        created_at: 1,
        updated_at: 1,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    }
}

fn lease() -> Lease {
    Lease {
        owner: "n".into(),
        until_ms: i64::MAX / 2,
    }
}

fn count(list: &Value, field: &str) -> usize {
    list[field].as_array().map_or(0, Vec::len)
}

/// What both kinds of tables owe: one task per call key, notes, done and undone, deletes,
/// and an unknown id as an error naming it.
async fn tasks_keep_their_semantics(tasks: &Tasks) {
    let connector = codemode_demo::connector(tasks.clone());
    drop(connector);
    let (a, b) = match tasks {
        Tasks::Sqlite(db) => (db.create("one", "x:1").await, db.create("one", "x:1").await),
        Tasks::Postgres(db) => (db.create("one", "x:1").await, db.create("one", "x:1").await),
    };
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a, b, "a repeated call key makes no second task");
    let id = a["id"].as_i64().unwrap();
    let (done, missing, note, list) = match tasks {
        Tasks::Sqlite(db) => (
            db.set_done(id, true).await,
            db.set_done(id + 99, true).await,
            db.add_note("hi", "x:2").await,
            db.list().await,
        ),
        Tasks::Postgres(db) => (
            db.set_done(id, true).await,
            db.set_done(id + 99, true).await,
            db.add_note("hi", "x:2").await,
            db.list().await,
        ),
    };
    assert_eq!(done.unwrap()["done"], Value::Bool(true));
    let missing = missing.unwrap_err().to_string();
    assert!(
        missing.contains(&format!("no task with id {}", id + 99)),
        "{missing}"
    );
    assert_eq!(note.unwrap()["text"], "hi");
    let list = list.unwrap();
    assert_eq!((count(&list, "tasks"), count(&list, "notes")), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_tasks_live_in_a_file_beside_the_stores_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let beside = TaskDb::path_beside(&path);
    assert_eq!(beside, dir.path().join("codemode-demo.db"));
    let db = TaskDb::open(&beside).unwrap();
    tasks_keep_their_semantics(&Tasks::Sqlite(db.clone())).await;

    // The store and the demo write at once: every write of both lands, and the demo's
    // writes (more than one checkpoint's worth) all stay.
    let writers: Vec<_> = (0..250)
        .map(|i| {
            let (store, db) = (store.clone(), db.clone());
            tokio::spawn(async move {
                if i < 20 {
                    store
                        .insert_execution("default", &execution(&format!("e{i}")), &lease(), 1_000)
                        .await
                        .unwrap();
                }
                db.create(&format!("task {i}"), &format!("e{i}:0"))
                    .await
                    .unwrap();
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(
        store.executions("default", None, None).await.unwrap().len(),
        20
    );
    drop((db, store));

    // Each file is still what it was, and the tasks are still there.
    let store = SqliteStore::open(&path).unwrap();
    let db = TaskDb::open(&beside).unwrap();
    let list = db.list().await.unwrap();
    assert_eq!(count(&list, "tasks"), 251);
    assert_eq!(count(&list, "notes"), 1);
    assert_eq!(
        store.executions("default", None, None).await.unwrap().len(),
        20
    );
}

/// Another process (a `codemode run` beside the server) holds the demo file's write lock: a
/// write waits for it on a blocking thread instead of failing, and lands once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_another_connection_holding_the_files_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode-demo.db");
    let db = TaskDb::open(&path).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let write = tokio::spawn({
        let db = db.clone();
        async move { db.create("waited", "k:0").await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!write.is_finished(), "the write did not wait for the lock");
    other.execute_batch("COMMIT").unwrap();
    let made = write.await.unwrap().unwrap();
    assert_eq!(made["title"], "waited");
    assert_eq!(count(&db.list().await.unwrap(), "tasks"), 1);
}

#[test]
fn sqlite_tasks_name_a_file_they_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("codemode-demo.db");
    let err = match TaskDb::open(&path) {
        Ok(_) => panic!("opened a file in a missing directory"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&path.display().to_string()), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tasks_live_in_the_stores_database_on_a_pool_of_their_own() {
    let Some(db) = ScratchDatabase::for_tests("postgres_tasks")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = PostgresStore::connect(db.url()).await.unwrap();
    let tasks = PgTasks::open(db.url()).await.unwrap();
    tasks_keep_their_semantics(&Tasks::Postgres(tasks.clone())).await;
    store
        .insert_execution("default", &execution("e"), &lease(), 1_000)
        .await
        .unwrap();
    drop(tasks);

    let again = PgTasks::open(db.url()).await.unwrap();
    let list = again.list().await.unwrap();
    assert_eq!(count(&list, "tasks"), 1, "the tasks outlive their pool");
    assert!(store.execution("default", "e").await.unwrap().is_some());
    store.close();
}

#[tokio::test]
async fn postgres_tasks_name_the_server_without_its_password() {
    // Nothing listens on port 1: the error says where, and never the password.
    let err = match PgTasks::open("postgres://u:s3cret@127.0.0.1:1/d").await {
        Ok(_) => panic!("connected to a closed port"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("postgres://u@127.0.0.1:1/d"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}
