//! Bad input and a misbehaving server: each a clear error naming the cause, never a password.

mod common;

use codemode::{Store, StoreError};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use std::time::Duration;

fn message(r: Result<PostgresStore, StoreError>) -> String {
    match r {
        Ok(_) => panic!("connect must fail"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_url_that_does_not_parse() {
    for url in [
        "postgres://user:hunter2@localhost:notaport/db",
        "postgres://user:hunter2@/db",
        "not a url at all password=hunter2",
    ] {
        let m = message(PostgresStore::connect(url).await);
        assert!(m.contains("invalid PostgreSQL URL"), "{url}: {m}");
        assert!(!m.contains("hunter2"), "the password leaked: {m}");
    }
}

#[tokio::test]
async fn a_refused_connection() {
    let m = message(PostgresStore::connect("postgres://postgres:hunter2@127.0.0.1:1/x").await);
    assert!(m.contains("refused"), "{m}");
    assert!(m.contains("127.0.0.1:1"), "names the server: {m}");
    assert!(!m.contains("hunter2"), "the password leaked: {m}");
}

#[tokio::test]
async fn a_missing_database() {
    let (db, _store) = setup_or_skip!("a_missing_database");
    let url = format!("{}_missing", db.url());
    let m = message(PostgresStore::connect(&url).await);
    assert!(m.contains("3D000") && m.contains("does not exist"), "{m}");
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let (db, store) = setup_or_skip!("a_newer_schema_is_refused");
    store.close();
    let client = common::raw(db.url()).await;
    client
        .execute("UPDATE codemode_schema_version SET version = 99", &[])
        .await
        .unwrap();
    match PostgresStore::connect(db.url()).await {
        Err(StoreError::NewerSchema {
            found, supported, ..
        }) => {
            assert_eq!(found, 99);
            assert_eq!(supported, codemode_postgres::SCHEMA_VERSION);
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
}

/// A database written by version 1 (before the index of terminal executions, decisions,
/// delivery order, workspace files, trace contexts, the audit archive and read-only flags) is migrated on connect and keeps its executions.
#[tokio::test]
async fn a_version_1_database_is_migrated_and_keeps_its_executions() {
    let (db, store) = setup_or_skip!("a_version_1_database_is_migrated");
    common::insert(&store, "rt", "e1", "n", 1).await;
    store.close();
    let client = common::raw(db.url()).await;
    client
        .batch_execute(
            "DROP INDEX codemode_executions_terminal;
             DROP INDEX codemode_executions_paused;
             ALTER TABLE codemode_executions DROP COLUMN decisions, DROP COLUMN traceparent,
                 DROP COLUMN clock;
             ALTER TABLE codemode_log_entries DROP COLUMN approved_args,
                 DROP COLUMN decisions, DROP COLUMN delivered, DROP COLUMN read_only;
             DROP TABLE codemode_workspace_files, codemode_workspace_changes;
             DROP TABLE codemode_audit_archive;
             UPDATE codemode_schema_version SET version = 1;",
        )
        .await
        .unwrap();
    let store = PostgresStore::connect(db.url()).await.unwrap();
    assert!(store.execution("rt", "e1").await.unwrap().is_some());
    let version: i64 = client
        .query_one("SELECT version FROM codemode_schema_version", &[])
        .await
        .unwrap()
        .get(0);
    let index: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'codemode_executions_terminal'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!((version, index), (codemode_postgres::SCHEMA_VERSION, 1));
}

#[tokio::test]
async fn a_role_without_privileges() {
    let Some(db) = ScratchDatabase::for_tests("a_role_without_privileges")
        .await
        .unwrap()
    else {
        return;
    };
    let role = format!("{}_ro", db.name());
    let admin = common::raw(db.url()).await;
    admin
        .batch_execute(&format!("CREATE ROLE {role} LOGIN"))
        .await
        .unwrap();
    let url = db
        .url()
        .replacen("postgres://postgres@", &format!("postgres://{role}:pw@"), 1);
    let result = PostgresStore::connect(&url).await;
    admin
        .batch_execute(&format!("DROP ROLE {role}"))
        .await
        .unwrap();
    let m = message(result);
    assert!(m.contains("permission denied"), "{m}");
    assert!(m.contains("42501"), "{m}");
    assert!(!m.contains(":pw@"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_fail_clearly_and_recover() {
    let (db, store) = setup_or_skip!("dropped_connections_fail_clearly_and_recover");
    common::insert(&store, "rt", "x", "n1", 1).await;
    let admin = common::raw(db.url()).await;
    // The server ends every codemode connection to this database mid-run.
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND application_name = 'codemode'",
            &[&db.name()],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut errors = Vec::new();
    let mut recovered = false;
    for _ in 0..5 {
        match store.execution("rt", "x").await {
            Ok(Some(e)) => {
                assert_eq!(e.id, "x");
                recovered = true;
                break;
            }
            Ok(None) => panic!("the execution vanished"),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert!(recovered, "no recovery: {errors:?}");
    for e in &errors {
        assert!(e.contains("postgres://"), "errors name the server: {e}");
    }
}
