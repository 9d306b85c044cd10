//! Whether a log entry's tool was read-only: a version 11 file gains the flag on open, its
//! entries read as writes (the safe side), and pruning keeps a recent run holding one.

mod common;

use codemode::{Commit, EntryState, ExecutionStatus, Store, Transition};
use codemode_sqlite::{SqliteStore, SCHEMA_VERSION};
use common::{entry, execution, lease, RT};

#[tokio::test]
async fn entries_of_a_version_11_file_read_as_writes_and_keep_their_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let now = codemode::now_ms();
    {
        let s = SqliteStore::open(&path).unwrap();
        let mut e = execution("old", now - 1_000);
        let mut call = entry(0, EntryState::Applied);
        call.read_only = true;
        e.log = vec![call];
        s.insert_execution(RT, &e, &lease("n", i64::MAX / 2), 50)
            .await
            .unwrap();
        let done = Commit {
            execution_id: "old".into(),
            owner: Some("n".into()),
            entries: Vec::new(),
            transition: Some(Transition::new(
                ExecutionStatus::Running,
                ExecutionStatus::Completed,
                now - 900,
            )),
            clock: None,
        };
        assert!(s.commit(RT, &done).await.unwrap());
        let read = s.execution(RT, "old").await.unwrap().unwrap();
        assert!(read.log[0].read_only, "the flag reads back as written");
    }
    // As a version 11 file, whose entries had no flag: the next open runs version 12.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "ALTER TABLE log_entries DROP COLUMN read_only;
             ALTER TABLE executions DROP COLUMN clock;",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 11).unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let read = s.execution(RT, "old").await.unwrap().unwrap();
    assert!(
        !read.log[0].read_only,
        "an entry from before reads as a write"
    );
    assert_eq!(
        s.prune_executions(RT, 0).await.unwrap(),
        0,
        "its run is kept"
    );
    assert!(s.execution(RT, "old").await.unwrap().is_some());
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}
