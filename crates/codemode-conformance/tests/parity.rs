//! The same outcome on SQLite and PostgreSQL, under races between two runtimes (two nodes)
//! on one database: subset approvals, approval against rejection, cancel during an approved
//! pass, a rollback cut after its last revert, NUL characters. Race rounds come from
//! `CODEMODE_RACE_ROUNDS` (default 20).

use codemode::Store;
use codemode_conformance::parity;
use codemode_postgres::{PostgresStore, ScratchDatabase};
use std::sync::Arc;

/// Two stores on one fresh SQLite file, kept alive by the returned directory.
fn sqlite_pair() -> (tempfile::TempDir, Arc<dyn Store>, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parity.db");
    let a = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
    let b = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
    (dir, a, b)
}

/// Two stores on one scratch PostgreSQL database, or `None` when there is no server (and
/// `CI` is not set).
async fn postgres_pair(test: &str) -> Option<(ScratchDatabase, Arc<dyn Store>, Arc<dyn Store>)> {
    let db = ScratchDatabase::for_tests(test)
        .await
        .expect("the PostgreSQL test server")?;
    let a = Arc::new(PostgresStore::connect(db.url()).await.expect("connect"));
    let b = Arc::new(PostgresStore::connect(db.url()).await.expect("connect"));
    Some((db, a, b))
}

/// One test per store for a case taking one store (`one`) or two on one database (`two`).
macro_rules! on_both_stores {
    ($(($kind:ident, $case:ident, $sqlite:ident, $postgres:ident)),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $sqlite() {
                let (_dir, a, b) = sqlite_pair();
                on_both_stores!(@run $kind, $case, a, b);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $postgres() {
                let Some((_db, a, b)) = postgres_pair(stringify!($postgres)).await else {
                    return;
                };
                on_both_stores!(@run $kind, $case, a, b);
            }
        )*
    };
    (@run one, $case:ident, $a:ident, $b:ident) => {{
        drop($b);
        parity::$case($a).await
    }};
    (@run two, $case:ident, $a:ident, $b:ident) => {
        parity::$case($a, $b).await
    };
}

on_both_stores! {
    (one, subset_approval_runs_exactly_the_approved_writes,
        sqlite_subset_approval, postgres_subset_approval),
    (two, approve_subset_against_reject,
        sqlite_approve_subset_against_reject, postgres_approve_subset_against_reject),
    (two, cancel_during_an_approved_pass,
        sqlite_cancel_during_an_approved_pass, postgres_cancel_during_an_approved_pass),
    (one, cancel_of_a_slow_approved_write_on_its_node,
        sqlite_cancel_of_a_slow_write_on_its_node, postgres_cancel_of_a_slow_write_on_its_node),
    (one, a_rollback_cut_after_its_last_revert_is_finished,
        sqlite_cut_rollback, postgres_cut_rollback),
    (one, nul_characters_round_trip, sqlite_nul_characters, postgres_nul_characters),
}

/// A store that fails the commit ending a pass (a trigger refuses `completed`): the run ends
/// `error`, naming the failure, never left `running`, and the caller gets an outcome, not an
/// `Err` (an HTTP 500 at the server).
async fn a_failed_last_commit_ends_the_run_as_an_error(store: Arc<dyn Store>) {
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let rt = codemode::Runtime::builder(store, executor)
        .build()
        .expect("runtime");
    let outcome = rt
        .call("async () => { console.log('hi'); return 1 }")
        .await
        .expect("an outcome, not an error");
    let codemode::Outcome::Error { error, logs, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        error.contains("could not record how this pass ended") && error.contains("refused by test"),
        "{error}"
    );
    assert_eq!(logs, &vec!["hi".to_string()]);
    let got = rt.execution(outcome.execution_id()).await.unwrap().unwrap();
    assert_eq!(got.status, codemode::ExecutionStatus::Error);
    assert_eq!(got.error.as_deref(), Some(error.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_failed_last_commit() {
    let (dir, a, _b) = sqlite_pair();
    let conn = rusqlite::Connection::open(dir.path().join("parity.db")).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse_completed BEFORE UPDATE OF status ON executions
         WHEN NEW.status = 'completed' BEGIN SELECT RAISE(ABORT, 'refused by test'); END;",
    )
    .unwrap();
    a_failed_last_commit_ends_the_run_as_an_error(a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_failed_last_commit() {
    let Some((db, a, _b)) = postgres_pair("postgres_failed_last_commit").await else {
        return;
    };
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "CREATE FUNCTION refuse_completed() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.status = 'completed' THEN RAISE EXCEPTION 'refused by test'; END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER refuse_completed BEFORE UPDATE ON codemode_executions
             FOR EACH ROW EXECUTE FUNCTION refuse_completed();",
        )
        .await
        .unwrap();
    a_failed_last_commit_ends_the_run_as_an_error(a).await;
}
