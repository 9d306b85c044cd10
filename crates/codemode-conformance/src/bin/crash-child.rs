//! Runs the crash script against a database and dies where it is told to.
//!
//! Usage: `crash-child DB JOURNAL before|after SEQ [approved|batch|batch-parallel]`; with
//! `approved` it runs the approved-write script and approves it, dying inside the approved
//! write; with `batch` it runs the batch script, approves the batch and dies inside the
//! write at SEQ, the ledger's writes running one at a time (so the ones before SEQ have run
//! and the ones after it have not); `batch-parallel` runs them at once; `edited` runs the
//! edited-approval script, approves its first write with edited arguments for the rest of the
//! run, and dies inside the write at SEQ; `clock` runs the clock script (its writes' arguments
//! read the clock and draw random numbers) and dies inside the write at SEQ. DB is a SQLite path or a `postgres://` URL.

use codemode::Runtime;
use codemode::{Approval, ApprovalScope, Store};
use codemode_conformance::journal::{
    ledger, CrashPoint, APPROVED_WRITE_SCRIPT, BATCH_WRITE_SCRIPT, CLOCK_SCRIPT, CRASH_SCRIPT,
    EDITED_WRITE_SCRIPT,
};
use std::sync::Arc;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (db, journal, point, seq, mode) = match args.as_slice() {
        [_, db, journal, point, seq] => (db, journal, point, seq, ""),
        [_, db, journal, point, seq, mode]
            if ["approved", "batch", "batch-parallel", "edited", "clock"]
                .contains(&mode.as_str()) =>
        {
            (db, journal, point, seq, mode.as_str())
        }
        _ => {
            eprintln!(
                "usage: crash-child DB JOURNAL before|after SEQ [approved|batch|batch-parallel|edited|clock]"
            );
            std::process::exit(2);
        }
    };
    let seq: u64 = seq.parse().expect("SEQ is a number");
    let crash = match point.as_str() {
        "before" => CrashPoint::BeforeEffect(seq),
        "after" => CrashPoint::AfterEffect(seq),
        _ => CrashPoint::None,
    };
    let store: Arc<dyn Store> = if db.starts_with("postgres://") {
        Arc::new(
            codemode_postgres::PostgresStore::connect(db)
                .await
                .expect("connect"),
        )
    } else {
        Arc::new(codemode_sqlite::SqliteStore::open(db).expect("open store"))
    };
    // A short pass deadline allows the short lease below (a lease outlives the longest pass).
    let options = codemode_quickjs::QuickJsOptions::default()
        .with_wall_time(codemode_conformance::journal::CHILD_WALL_TIME);
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(options));
    let mut builder = Runtime::builder(store, executor)
        .connector(ledger(journal.into(), crash))
        // A short lease, so the test can take the run over soon after this process dies.
        .lease(codemode_conformance::journal::CHILD_LEASE);
    if mode == "batch" {
        builder = builder.max_in_flight_for("ledger", 1);
    }
    let runtime = builder.build().expect("runtime");
    if mode == "batch" || mode == "batch-parallel" {
        let outcome = runtime.call(BATCH_WRITE_SCRIPT).await.expect("call");
        let outcome = runtime
            .approve(outcome.execution_id())
            .await
            .expect("approve");
        println!("{}", serde_json::to_string(&outcome).unwrap());
        return;
    }
    if mode == "edited" {
        let outcome = runtime.call(EDITED_WRITE_SCRIPT).await.expect("call");
        let mut approval = Approval::by("alice").scope(ApprovalScope::Execution);
        approval.args = Some(serde_json::json!({ "value": "person" }));
        let outcome = runtime
            .approve_with(outcome.execution_id(), approval)
            .await
            .expect("approve");
        println!("{}", serde_json::to_string(&outcome).unwrap());
        return;
    }
    if mode == "approved" {
        let outcome = runtime.call(APPROVED_WRITE_SCRIPT).await.expect("call");
        let outcome = runtime
            .approve(outcome.execution_id())
            .await
            .expect("approve");
        println!("{}", serde_json::to_string(&outcome).unwrap());
        return;
    }
    let script = if mode == "clock" {
        CLOCK_SCRIPT
    } else {
        CRASH_SCRIPT
    };
    let outcome = runtime.call(script).await.expect("call");
    println!("{}", serde_json::to_string(&outcome).unwrap());
}
