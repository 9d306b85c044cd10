//! Decisions racing from two runtimes (two nodes) on one store: on one SQLite file through
//! two connections, and on one PostgreSQL database through two pools. Pairs per kind come
//! from `CODEMODE_RACE_PAIRS` (default 200).

use codemode::Store;
use codemode_conformance::races;
use codemode_postgres::{PostgresStore, ScratchDatabase};
use std::sync::Arc;

/// Two stores on one fresh SQLite file, kept alive by the returned directory.
fn sqlite_pair() -> (tempfile::TempDir, Arc<dyn Store>, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("races.db");
    let a = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
    let b = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
    (dir, a, b)
}

/// Two stores on one scratch PostgreSQL database, or `None` when there is no server.
async fn postgres_pair(test: &str) -> Option<(ScratchDatabase, Arc<dyn Store>, Arc<dyn Store>)> {
    let db = ScratchDatabase::for_tests(test)
        .await
        .expect("the PostgreSQL test server")?;
    let a = Arc::new(PostgresStore::connect(db.url()).await.expect("connect"));
    let b = Arc::new(PostgresStore::connect(db.url()).await.expect("connect"));
    Some((db, a, b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rollback_against_rollback() {
    let (_dir, a, b) = sqlite_pair();
    races::rollback_against_rollback(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rollback_against_approve() {
    let (_dir, a, b) = sqlite_pair();
    races::rollback_against_approve(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_delete_against_approve() {
    let (_dir, a, b) = sqlite_pair();
    races::delete_against_approve(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rollback_against_rollback() {
    let Some((_db, a, b)) = postgres_pair("postgres_rollback_against_rollback").await else {
        return;
    };
    races::rollback_against_rollback(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rollback_against_approve() {
    let Some((_db, a, b)) = postgres_pair("postgres_rollback_against_approve").await else {
        return;
    };
    races::rollback_against_approve(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_delete_against_approve() {
    let Some((_db, a, b)) = postgres_pair("postgres_delete_against_approve").await else {
        return;
    };
    races::delete_against_approve(a, b).await;
}
