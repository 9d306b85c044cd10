//! The file itself: creation, bad files, newer schemas, reopening, sharing, large values.

mod common;

use codemode::{
    Commit, Deletion, EntryState, ExecutionStatus, FileStore, Store, StoreError, Transition,
};
use codemode_sqlite::{SqliteOptions, SqliteStore, APPLICATION_ID, SCHEMA_VERSION};
use common::{entry, execution, lease, RT};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const FAR: i64 = i64::MAX / 2;

fn open_err(path: &Path) -> StoreError {
    match SqliteStore::open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e,
    }
}

fn assert_corrupt(path: &Path, err: StoreError) {
    let text = err.to_string();
    match err {
        StoreError::Corrupt { location, .. } => assert_eq!(location, path.display().to_string()),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(text.contains(&path.display().to_string()), "{text}");
}

/// Fills a store with `n` executions of a few KB each, then closes it (checkpointing the WAL).
async fn filled(path: &Path, n: usize) {
    let s = SqliteStore::open(path).unwrap();
    for i in 0..n {
        let mut e = execution(&format!("e{i}"), i as i64);
        e.code = "x".repeat(4_000);
        e.log = vec![entry(0, EntryState::Applied)];
        s.insert_execution(RT, &e, &lease("n", FAR), 1_000)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_missing_or_empty_file_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("new.db");
    let s = SqliteStore::open(&missing).unwrap();
    assert_eq!(s.location(), missing.display().to_string());
    assert!(s.executions(RT, None, None).await.unwrap().is_empty());
    drop(s);
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let s = SqliteStore::open(&empty).unwrap();
    s.put_snippet(RT, &common::snippet("a")).await.unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(&empty).unwrap();
    let id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(
        (id, version, mode.as_str()),
        (APPLICATION_ID, SCHEMA_VERSION, "wal")
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = "these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    assert_corrupt(&path, open_err(&path));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_sqlite_file_of_another_application_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = open_err(&path);
    assert!(err.to_string().contains("users"), "{err}");
    assert_corrupt(&path, err);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(!dir.path().join("other.db-wal").exists());

    // Another application's marker, even with no tables, is not ours either.
    let marked = dir.path().join("marked.db");
    {
        let conn = rusqlite::Connection::open(&marked).unwrap();
        conn.pragma_update(None, "application_id", 1234).unwrap();
    }
    let err = open_err(&marked);
    assert!(err.to_string().contains("1234"), "{err}");
    assert_corrupt(&marked, err);
}

#[tokio::test]
async fn a_database_of_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    filled(&path, 1).await;
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let err = open_err(&path);
    let text = err.to_string();
    match err {
        StoreError::NewerSchema {
            location,
            found,
            supported,
        } => {
            assert_eq!(location, path.display().to_string());
            assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("newer"), "{text}");
}

/// The schema of version 1 as it was shipped, for the migration test.
const VERSION_1: &str = "
CREATE TABLE executions (
    pk INTEGER PRIMARY KEY, runtime TEXT NOT NULL, id TEXT NOT NULL, code TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
      ('running', 'paused', 'completed', 'error', 'rejected', 'rolled_back')),
    result TEXT, error TEXT, logs TEXT NOT NULL, connectors TEXT NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, lease_owner TEXT,
    lease_until_ms INTEGER, UNIQUE (runtime, id));
CREATE INDEX executions_by_age ON executions (runtime, created_at, pk);
CREATE TABLE log_entries (
    runtime TEXT NOT NULL, execution_id TEXT NOT NULL, seq INTEGER NOT NULL,
    connector TEXT NOT NULL, method TEXT NOT NULL, args TEXT NOT NULL, result TEXT,
    error TEXT, requires_approval INTEGER NOT NULL, ephemeral INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN
      ('executing', 'applied', 'pending', 'reverted', 'error')),
    PRIMARY KEY (runtime, execution_id, seq)) WITHOUT ROWID;
CREATE TABLE snippets (
    runtime TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, code TEXT NOT NULL,
    saved_at INTEGER NOT NULL, input_schema TEXT, connectors TEXT NOT NULL,
    PRIMARY KEY (runtime, name)) WITHOUT ROWID;
INSERT INTO executions (runtime, id, code, status, logs, connectors, created_at, updated_at,
                        lease_owner, lease_until_ms)
VALUES ('default', 'done', 'c', 'completed', '[]', '[]', 1, 1, NULL, NULL),
       ('default', 'live', 'c', 'running', '[]', '[]', 2, 2, 'n', 9000000000000000);
INSERT INTO log_entries VALUES ('default', 'done', 0, 'x', 'y', '{}', '1', NULL, 0, 0, 'applied');
";

/// A file written by version 1 (no terminal index, no `cancelled`, no decisions) is migrated
/// on open and keeps its executions; the migrated file takes the new status and decisions.
#[tokio::test]
async fn a_version_1_file_is_migrated_and_keeps_its_executions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(VERSION_1).unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let done = s.execution(RT, "done").await.unwrap().unwrap();
    assert_eq!(done.status, ExecutionStatus::Completed);
    assert_eq!(done.log.len(), 1);
    assert!(done.decisions.is_empty() && done.log[0].decisions.is_empty());
    assert_eq!(done.log[0].approved_args, None);
    let cancel = Transition::new(ExecutionStatus::Running, ExecutionStatus::Cancelled, 3)
        .with_decision(codemode::Decision::new(
            codemode::DecisionKind::Cancel,
            codemode::Actor::cli(),
            3,
            Vec::new(),
        ));
    let cancelled = Commit {
        execution_id: "live".into(),
        owner: None,
        entries: Vec::new(),
        transition: Some(cancel),
        clock: None,
    };
    assert!(s.commit(RT, &cancelled).await.unwrap());
    let live = s.execution(RT, "live").await.unwrap().unwrap();
    assert_eq!(live.status, ExecutionStatus::Cancelled);
    assert_eq!(live.decisions[0].by, codemode::Actor::cli());
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let index: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'executions_terminal'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((version, index), (SCHEMA_VERSION, 1));
}

/// Undo records written by version 5 (before they carried their execution) get it from
/// their key (`execution:seq`) on open, so deleting that execution deletes them.
#[tokio::test]
async fn version_5_undo_records_learn_their_execution_and_go_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let s = SqliteStore::open(&path).unwrap();
    s.insert_execution(RT, &execution("a:b", 1), &lease("n", FAR), 50)
        .await
        .unwrap();
    drop(s);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE audit_archive;
             ALTER TABLE executions DROP COLUMN clock;
             DROP INDEX workspace_changes_undo;
             ALTER TABLE workspace_changes DROP COLUMN undo_size;
             DROP INDEX workspace_changes_by_execution;
             DROP INDEX executions_paused;
             ALTER TABLE workspace_changes DROP COLUMN execution_id;
             ALTER TABLE executions DROP COLUMN traceparent;
             INSERT INTO workspace_changes VALUES ('w', 'a:b:7', '/f', NULL, 0, 1, 0, 1);
             INSERT INTO workspace_changes VALUES ('w', 'a:70', '/g', NULL, 0, 1, 0, 1);
             INSERT INTO workspace_changes VALUES ('w', 'loose', '/h', NULL, 0, 1, 0, 1);
             UPDATE executions SET status = 'completed', lease_owner = NULL,
                                   lease_until_ms = NULL;",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 5).unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let deleted = s.delete_execution(RT, "a:b", 10).await.unwrap();
    assert_eq!(deleted, Deletion::Deleted(ExecutionStatus::Completed));
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let left: Vec<(String, Option<String>)> = conn
        .prepare("SELECT key, execution_id FROM workspace_changes ORDER BY key")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected = [("a:70", Some("a")), ("loose", None)];
    let expected: Vec<_> = expected
        .iter()
        .map(|(k, e)| (k.to_string(), e.map(str::to_string)))
        .collect();
    assert_eq!(left, expected);
}

#[tokio::test]
async fn a_damaged_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    filled(&path, 30).await;
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 16 * 4096, "{}", bytes.len());
    // Scribble over every page but the first.
    for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
        *b = (i * 7 % 251) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    assert_corrupt(&path, open_err(&path));
}

#[tokio::test]
async fn a_truncated_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    filled(&path, 30).await;
    let full = std::fs::read(&path).unwrap();
    for keep in [full.len() / 2, 4096 + 100, 60] {
        std::fs::write(&path, &full[..keep]).unwrap();
        assert_corrupt(&path, open_err(&path));
    }
}

#[tokio::test]
async fn without_the_open_check_a_damaged_file_still_gives_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    filled(&path, 30).await;
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();
    let options = SqliteOptions {
        quick_check: false,
        ..SqliteOptions::default()
    };
    // Opening may succeed (only the header and schema are read); reads must fail cleanly.
    if let Ok(s) = SqliteStore::open_with(&path, &options) {
        let err = s.executions(RT, None, None).await.unwrap_err();
        assert_corrupt(&path, err);
    }
}

#[tokio::test]
async fn reopening_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let s = SqliteStore::open(&path).unwrap();
    let mut e = execution("e", 1);
    e.log = vec![entry(0, EntryState::Applied), entry(1, EntryState::Pending)];
    s.insert_execution(RT, &e, &lease("n", FAR), 50)
        .await
        .unwrap();
    let pause = Commit {
        execution_id: "e".into(),
        owner: Some("n".into()),
        entries: vec![],
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Paused,
            7,
        )),
        clock: None,
    };
    assert!(s.commit(RT, &pause).await.unwrap());
    s.put_snippet("other", &common::snippet("s")).await.unwrap();
    let before = s.execution(RT, "e").await.unwrap();
    drop(s);
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.execution(RT, "e").await.unwrap(), before);
    assert_eq!(s.pending(RT, None).await.unwrap().len(), 1);
    assert_eq!(
        s.snippet("other", "s").await.unwrap(),
        Some(common::snippet("s"))
    );
}

#[tokio::test]
async fn a_second_connection_sees_committed_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open_with(
        &path,
        &SqliteOptions {
            synchronous_full: true,
            busy_timeout: Duration::from_secs(2),
            quick_check: false,
        },
    )
    .unwrap();
    a.insert_execution(RT, &execution("e", 1), &lease("a", FAR), 50)
        .await
        .unwrap();
    assert!(b.execution(RT, "e").await.unwrap().is_some());
    let c = Commit {
        execution_id: "e".into(),
        owner: Some("a".into()),
        entries: vec![entry(0, EntryState::Applied)],
        transition: None,
        clock: None,
    };
    assert!(b.commit(RT, &c).await.unwrap());
    assert_eq!(a.execution(RT, "e").await.unwrap().unwrap().log.len(), 1);
}

#[test]
fn many_connections_opening_a_new_file_at_once_all_succeed() {
    // Identification reads one snapshot and migrations re-check the version under the write
    // lock, so a connection never sees a half-created schema. Several rounds to catch races.
    let dir = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let path = dir.path().join(format!("codemode-{round}.db"));
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| SqliteStore::open(&path).map(|_| ())))
                .collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
        });
    }
}

#[tokio::test]
async fn megabyte_values_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let s = SqliteStore::open(&path).unwrap();
    let big = "é".repeat(500_000) + &"x".repeat(1_000_000 - 500_000);
    let mut e = execution("big", 1);
    e.code = big.clone();
    s.insert_execution(RT, &e, &lease("n", FAR), 50)
        .await
        .unwrap();
    let mut call = entry(0, EntryState::Applied);
    call.args = json!({"body": big});
    call.result = Some(json!([big, {"nested": big}]));
    let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Completed, 2);
    t.result = Some(json!(big));
    t.error = Some(big.clone());
    t.logs = Some(vec![big.clone()]);
    let c = Commit {
        execution_id: "big".into(),
        owner: Some("n".into()),
        entries: vec![call.clone()],
        transition: Some(t),
        clock: None,
    };
    assert!(s.commit(RT, &c).await.unwrap());
    let mut snip = common::snippet("big");
    snip.code = big.clone();
    s.put_snippet(RT, &snip).await.unwrap();
    drop(s);
    let s = SqliteStore::open(&path).unwrap();
    let got = s.execution(RT, "big").await.unwrap().unwrap();
    assert_eq!(got.code, big);
    assert_eq!(got.log, vec![call]);
    assert_eq!(got.result, Some(json!(big)));
    assert_eq!(got.error.as_deref(), Some(big.as_str()));
    assert_eq!(got.logs, vec![big.clone()]);
    assert_eq!(s.snippet(RT, "big").await.unwrap().unwrap().code, big);
}

const CHILD_ENV: &str = "CODEMODE_SQLITE_CHILD_DB";
const CHILD_WRITES: usize = 150;

/// Writes executions `child-*` into the file named by the environment (a no-op otherwise).
#[tokio::test]
async fn child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let s = SqliteStore::open(&path).unwrap();
    write_many(&s, "child").await;
}

async fn write_many(s: &SqliteStore, who: &str) {
    for i in 0..CHILD_WRITES {
        let id = format!("{who}-{i}");
        s.insert_execution(RT, &execution(&id, i as i64), &lease(who, FAR), 10_000)
            .await
            .unwrap();
        let c = Commit {
            execution_id: id,
            owner: Some(who.into()),
            entries: vec![entry(0, EntryState::Applied)],
            transition: Some(Transition::new(
                ExecutionStatus::Running,
                ExecutionStatus::Completed,
                i as i64,
            )),
            clock: None,
        };
        assert!(s.commit(RT, &c).await.unwrap());
    }
}

#[tokio::test]
async fn two_processes_write_the_same_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    let s = SqliteStore::open(&path).unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["child_writer", "--exact", "--quiet"])
        .env(CHILD_ENV, &path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    write_many(&s, "parent").await;
    assert!(child.wait().unwrap().success());
    let all = s.executions(RT, None, None).await.unwrap();
    assert_eq!(all.len(), 2 * CHILD_WRITES);
    for who in ["parent", "child"] {
        let mine = all.iter().filter(|e| e.id.starts_with(who)).count();
        assert_eq!(mine, CHILD_WRITES, "{who}");
    }
    assert!(all
        .iter()
        .all(|e| e.status == ExecutionStatus::Completed && e.log.len() == 1));
}

/// Every column of every table the version 9 migration copies, as text, in key order.
fn dump(conn: &rusqlite::Connection) -> Vec<String> {
    let mut rows = Vec::new();
    for query in [
        "SELECT * FROM executions ORDER BY pk",
        "SELECT * FROM log_entries ORDER BY runtime, execution_id, seq",
    ] {
        let mut statement = conn.prepare(query).unwrap();
        let columns = statement.column_count();
        let mut found = statement.query([]).unwrap();
        while let Some(row) = found.next().unwrap() {
            let values: Vec<String> = (0..columns)
                .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                .collect();
            rows.push(values.join("|"));
        }
    }
    rows
}

/// Version 9 copies the executions and log entries into tables whose checks SQLite evaluates
/// without a temporary table: every column of every row survives, the checks still refuse an
/// unknown status or state, and no write of an execution or entry builds a temporary table.
#[tokio::test]
async fn version_9_keeps_every_column_and_writes_without_temporary_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    drop(SqliteStore::open(&path).unwrap());
    let before = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "ALTER TABLE log_entries DROP COLUMN read_only;
             ALTER TABLE executions DROP COLUMN clock;
             INSERT INTO executions VALUES (7, 'default', 'e1', 'code', 'paused', '{\"r\":1}', 'err',
                '[\"log\"]', '[\"tasks\"]', 1, 2, 'node', 99, '[{\"d\":1}]', '00-abc-def-01');
             INSERT INTO executions VALUES (8, 'default', 'e2', 'code', 'cancelled', NULL, NULL,
                '[]', '[]', 3, 4, NULL, NULL, NULL, NULL);
             INSERT INTO log_entries VALUES ('default', 'e1', 0, 'tasks', 'get', '{}', '1', NULL,
                1, 0, 'pending', '{\"a\":2}', '[{\"d\":2}]', 5);",
        )
        .unwrap();
        // As a version 8 file: the next open runs version 9 (and those after it).
        conn.execute_batch(
            "DROP TABLE audit_archive;
             DROP INDEX workspace_changes_undo;
             ALTER TABLE workspace_changes DROP COLUMN undo_size;",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 8).unwrap();
        dump(&conn)
    };
    assert_eq!(before.len(), 3);
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Version 12 adds each entry's read-only flag, 0 (a write) for the entries already there;
    // version 13 each execution's clock tape, NULL (nothing recorded).
    let mut expected = before.clone();
    expected[0].push_str("|Null");
    expected[1].push_str("|Null");
    expected[2].push_str("|Integer(0)");
    assert_eq!(dump(&conn), expected);
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let bad_status = conn.execute(
        "INSERT INTO executions (runtime, id, code, status, logs, connectors, created_at, updated_at)
         VALUES ('default', 'e3', 'c', 'finished', '[]', '[]', 1, 1)",
        [],
    );
    assert!(bad_status.is_err(), "an unknown status was stored");
    let bad_state = conn.execute(
        "INSERT INTO log_entries (runtime, execution_id, seq, connector, method, args,
                                  requires_approval, ephemeral, state)
         VALUES ('default', 'e1', 1, 't', 'm', '{}', 0, 0, 'done')",
        [],
    );
    assert!(bad_state.is_err(), "an unknown state was stored");
    for write in [
        "INSERT INTO executions (runtime, id, code, status, logs, connectors, created_at, updated_at) VALUES (?1, ?1, ?1, ?1, ?1, ?1, 1, 1)",
        "UPDATE executions SET status = ?1 WHERE runtime = ?1 AND id = ?1",
        "DELETE FROM executions WHERE runtime = ?1 AND id = ?1",
        "INSERT INTO log_entries (runtime, execution_id, seq, connector, method, args, requires_approval, ephemeral, state) VALUES (?1, ?1, 1, ?1, ?1, ?1, 0, 0, ?1)",
        "UPDATE log_entries SET state = ?1 WHERE runtime = ?1 AND execution_id = ?1",
    ] {
        let mut explain = conn.prepare(&format!("EXPLAIN {write}")).unwrap();
        let opcodes: Vec<String> = explain
            .query_map(["x"], |r| r.get::<_, String>(1))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            !opcodes.iter().any(|op| op == "OpenEphemeral"),
            "{write} builds a temporary table"
        );
    }
}

/// Version 10 measures what each undo record keeps (in UTF-8 bytes), so that a file migrated
/// from version 9 counts its existing undo records against the workspace quota.
#[tokio::test]
async fn version_10_measures_the_undo_records_a_file_already_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codemode.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE audit_archive;
             ALTER TABLE log_entries DROP COLUMN read_only;
             ALTER TABLE executions DROP COLUMN clock;
             DROP INDEX workspace_changes_undo;
             ALTER TABLE workspace_changes DROP COLUMN undo_size;
             INSERT INTO workspace_changes VALUES ('w', 'e:0', '/f', 'héllo', 1, 1, 0, 1, 'e');
             INSERT INTO workspace_changes VALUES ('w', 'e:1', '/g', NULL, 0, 1, 0, 1, 'e');
             INSERT INTO workspace_files VALUES ('w', '/f', 'x', 1, 1);",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 9).unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let change = codemode::FileChange {
        workspace: "w".into(),
        path: "/h".into(),
        op: codemode::FileOp::Write("ab".into()),
        key: None,
        quota_bytes: 100,
        max_file_bytes: 100,
        at_ms: 2,
    };
    // 1 byte of files and 6 of undo ("héllo" is 6 UTF-8 bytes), then 2 more.
    assert_eq!(
        s.change_file(&change).await.unwrap(),
        codemode::FileChangeOutcome::Applied {
            size: Some(2),
            existed: false,
            used_bytes: 9,
            repeated: false
        }
    );
}
