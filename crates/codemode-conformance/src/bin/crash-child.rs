//! Runs the crash script against a database and dies where it is told to.
//!
//! Usage: `crash-child DB JOURNAL before|after SEQ`

use codemode::Runtime;
use codemode_conformance::journal::{ledger, CrashPoint, CRASH_SCRIPT};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, journal, point, seq] = args.as_slice() else {
        eprintln!("usage: crash-child DB JOURNAL before|after SEQ");
        std::process::exit(2);
    };
    let seq: u64 = seq.parse().expect("SEQ is a number");
    let crash = match point.as_str() {
        "before" => CrashPoint::BeforeEffect(seq),
        "after" => CrashPoint::AfterEffect(seq),
        _ => CrashPoint::None,
    };
    let store = Arc::new(codemode_sqlite::SqliteStore::open(db).expect("open store"));
    // A short pass deadline allows the short lease below (a lease outlives the longest pass).
    let options =
        codemode_quickjs::QuickJsOptions::default().with_wall_time(Duration::from_millis(150));
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(options));
    let runtime = Runtime::builder(store, executor)
        .connector(ledger(journal.into(), crash))
        // A short lease, so the test can take the run over soon after this process dies.
        .lease(Duration::from_millis(300))
        .build()
        .expect("runtime");
    let outcome = runtime.call(CRASH_SCRIPT).await.expect("call");
    println!("{}", serde_json::to_string(&outcome).unwrap());
}
