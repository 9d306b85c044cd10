//! The audit archive on SQLite: a version 10 file gains it on open, and an archived record
//! holds what the audit export reads, never the code, results or console output.

mod common;

use codemode::{Actor, Commit, Decision, DecisionKind, EntryState, ExecutionStatus, Store};
use codemode::{Deletion, Transition};
use codemode_sqlite::{SqliteStore, SCHEMA_VERSION};
use common::{entry, execution, lease, RT};

#[tokio::test]
async fn a_version_10_file_gains_the_archive_and_keeps_only_the_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    {
        let s = SqliteStore::open(&path).unwrap();
        let mut e = execution("e1", 1_000);
        let mut write = entry(0, EntryState::Applied);
        write.requires_approval = true;
        write.decisions = vec![Decision::new(
            DecisionKind::Approve,
            Actor::new("alice"),
            1_001,
            vec![0],
        )];
        e.log = vec![write, entry(1, EntryState::Error)];
        e.decisions = write_decisions();
        e.logs = vec!["SECRET console line".into()];
        s.insert_execution(RT, &e, &lease("n", i64::MAX / 2), 1_000)
            .await
            .unwrap();
        let done = Commit {
            execution_id: "e1".into(),
            owner: Some("n".into()),
            entries: Vec::new(),
            transition: Some(Transition::new(
                ExecutionStatus::Running,
                ExecutionStatus::Completed,
                1_050,
            )),
            clock: None,
        };
        assert!(s.commit(RT, &done).await.unwrap());
    }
    // As a version 10 file: the next open runs version 11 and on.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE audit_archive; ALTER TABLE log_entries DROP COLUMN read_only;
             ALTER TABLE executions DROP COLUMN clock;",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 10).unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let before = s.audit_executions(RT, 0, i64::MAX, 10).await.unwrap();
    assert_eq!(before.len(), 1);
    assert_eq!(
        s.delete_execution(RT, "e1", 2_000).await.unwrap(),
        Deletion::Deleted(ExecutionStatus::Completed)
    );
    assert_eq!(
        s.audit_executions(RT, 0, i64::MAX, 10).await.unwrap(),
        before
    );
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let record: String = conn
        .query_row("SELECT record FROM audit_archive", [], |r| r.get(0))
        .unwrap();
    for absent in ["SECRET", "async ()", "\"number\""] {
        assert!(!record.contains(absent), "{absent} in {record}");
    }
    assert!(
        record.contains("alice") && record.contains("issue 0"),
        "{record}"
    );
}

fn write_decisions() -> Vec<Decision> {
    vec![Decision::new(
        DecisionKind::Approve,
        Actor::new("alice"),
        1_001,
        vec![0],
    )]
}
