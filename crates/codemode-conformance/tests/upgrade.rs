//! Executions an earlier release recorded (every directory under `fixtures/upgrade/`) are
//! approved, resumed and rolled back by this build exactly as that release said they must
//! be, on SQLite and on PostgreSQL; a fixture whose schema is newer than this build knows is
//! refused, naming the version found, the version supported and what to do, and left as it
//! was.

use codemode::StoreError;
use codemode_conformance::upgrade::{
    differences, exercise, fixtures_root, load_dump, Expected, EXPECTED_FILE, POSTGRES_FILE,
    SQLITE_FILE,
};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use codemode_sqlite::SqliteStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A paused execution every fixture holds, to show a refused store was left as it was.
const PAUSED: &str = "upgrade-approval-ts";

/// Every fixture directory, oldest release first; there must be at least one.
fn fixture_dirs() -> Vec<PathBuf> {
    let root = fixtures_root();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no upgrade fixtures under {}: record them with `cargo run -p codemode-conformance --bin upgrade-fixtures`",
        root.display()
    );
    dirs
}

fn expected(dir: &Path) -> Expected {
    let path = dir.join(EXPECTED_FILE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What differs between what `dir` expects and what this build did with its copy on `label`.
fn compare(dir: &Path, expected: &Expected, got: &serde_json::Value, label: &str) -> Vec<String> {
    differences(&expected.outcomes, got, 30)
        .into_iter()
        .map(|d| {
            format!(
                "{} on {label} (recorded by {}): outcomes{d}",
                dir.display(),
                expected.recorded_by
            )
        })
        .collect()
}

const HOW_TO_FIX: &str = "an execution recorded by an earlier release resumes differently with \
    this build. Keep old runs resuming as they did (normalisation, the sandbox glue and the \
    schema read them), or ship a migration; see the upgrade fixtures in \
    crates/codemode-conformance/README.md";

/// A copy of the SQLite fixture of `dir` in `tmp`, with its schema version checked.
fn sqlite_copy(dir: &Path, expected: &Expected, tmp: &Path) -> PathBuf {
    let copy = tmp.join(SQLITE_FILE);
    std::fs::copy(dir.join(SQLITE_FILE), &copy)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(SQLITE_FILE).display()));
    assert_eq!(
        user_version(&copy),
        expected.schema.sqlite,
        "{}: the SQLite fixture is not at the version expected.json names",
        dir.display()
    );
    copy
}

fn user_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_runs_resume_as_recorded_on_sqlite() {
    let mut failures = Vec::new();
    for dir in fixture_dirs() {
        let expected = expected(&dir);
        let tmp = tempfile::tempdir().unwrap();
        let copy = sqlite_copy(&dir, &expected, tmp.path());
        let store = SqliteStore::open(&copy).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let got = exercise(Arc::new(store), &tmp.path().join("ledger"), &expected.steps)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(
            user_version(&copy),
            codemode_sqlite::SCHEMA_VERSION,
            "migrated on open"
        );
        failures.extend(compare(&dir, &expected, &got, "SQLite"));
    }
    assert!(
        failures.is_empty(),
        "{HOW_TO_FIX}:\n{}",
        failures.join("\n")
    );
}

/// A scratch database holding the PostgreSQL fixture of `dir`, with its version checked.
async fn postgres_copy(dir: &Path, expected: &Expected, test: &str) -> Option<ScratchDatabase> {
    let db = ScratchDatabase::for_tests(test)
        .await
        .expect("the PostgreSQL test server")?;
    let dump = std::fs::read_to_string(dir.join(POSTGRES_FILE))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(POSTGRES_FILE).display()));
    load_dump(db.url(), &dump)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert_eq!(
        pg_query(
            db.url(),
            "SELECT version::text FROM codemode_schema_version"
        )
        .await,
        expected.schema.postgres.to_string(),
        "{}: the PostgreSQL fixture is not at the version expected.json names",
        dir.display()
    );
    Some(db)
}

/// The first column of the first row `sql` returns, as text.
async fn pg_query(url: &str, sql: &str) -> String {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_runs_resume_as_recorded_on_postgres() {
    let mut failures = Vec::new();
    for dir in fixture_dirs() {
        let expected = expected(&dir);
        let Some(db) = postgres_copy(&dir, &expected, "recorded_runs_resume_on_postgres").await
        else {
            return;
        };
        let store = PostgresStore::connect(db.url())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let tmp = tempfile::tempdir().unwrap();
        let got = exercise(Arc::new(store), &tmp.path().join("ledger"), &expected.steps)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(
            pg_query(
                db.url(),
                "SELECT version::text FROM codemode_schema_version"
            )
            .await,
            codemode_postgres::SCHEMA_VERSION.to_string(),
            "migrated on connect"
        );
        failures.extend(compare(&dir, &expected, &got, "PostgreSQL"));
    }
    assert!(
        failures.is_empty(),
        "{HOW_TO_FIX}:\n{}",
        failures.join("\n")
    );
}

/// The refusal of a store whose schema is `found`, newer than this build's `supported`.
fn check_refusal(refused: Result<(), StoreError>, found: i64, supported: i64, location: &str) {
    let err = refused.expect_err("a store of a newer schema must be refused");
    let text = err.to_string();
    assert!(
        matches!(err, StoreError::NewerSchema { found: f, supported: s, .. } if f == found && s == supported),
        "{err:?}"
    );
    for part in [
        format!("schema version {found}"),
        format!("the {supported} this build supports"),
        "upgrade codemode".to_string(),
        location.to_string(),
    ] {
        assert!(text.contains(&part), "{text:?} lacks {part:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixture_of_a_newer_schema_is_refused_and_left_alone_on_sqlite() {
    let supported = codemode_sqlite::SCHEMA_VERSION;
    for dir in fixture_dirs() {
        let expected = expected(&dir);
        let tmp = tempfile::tempdir().unwrap();
        let copy = sqlite_copy(&dir, &expected, tmp.path());
        let conn = rusqlite::Connection::open(&copy).unwrap();
        conn.pragma_update(None, "user_version", supported + 1)
            .unwrap();
        drop(conn);

        let opened = SqliteStore::open(&copy).map(drop);
        check_refusal(opened, supported + 1, supported, copy.to_str().unwrap());

        // Nothing was written: the version, the journal mode and the paused run are as they were.
        let conn = rusqlite::Connection::open(&copy).unwrap();
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        let status: String = conn
            .query_row(
                "SELECT status FROM executions WHERE id = ?1",
                [PAUSED],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            (version, mode.as_str(), status.as_str()),
            (supported + 1, "delete", "paused"),
            "{}",
            dir.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixture_of_a_newer_schema_is_refused_and_left_alone_on_postgres() {
    let supported = codemode_postgres::SCHEMA_VERSION;
    for dir in fixture_dirs() {
        let expected = expected(&dir);
        let Some(db) = postgres_copy(&dir, &expected, "newer_schema_refused_on_postgres").await
        else {
            return;
        };
        pg_query(
            db.url(),
            &format!(
                "UPDATE codemode_schema_version SET version = {} RETURNING version::text",
                supported + 1
            ),
        )
        .await;

        let connected = PostgresStore::connect(db.url()).await.map(drop);
        let location = codemode_postgres::redact(db.url());
        let location = location.split('?').next().unwrap_or_default();
        let database = location.rsplit('/').next().unwrap();
        check_refusal(connected, supported + 1, supported, database);

        let left = pg_query(
            db.url(),
            &format!(
                "SELECT (SELECT version FROM codemode_schema_version)::text || ' ' || status \
                 FROM codemode_executions WHERE id = '{PAUSED}'"
            ),
        )
        .await;
        assert_eq!(
            left,
            format!("{} paused", supported + 1),
            "{}",
            dir.display()
        );
    }
}
