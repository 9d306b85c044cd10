//! A node of a multi-node test: one runtime on a PostgreSQL store, driven over stdin.
//!
//! Usage:
//! - `pg-node URL RUNTIME serve`: reads `approve ID` lines and answers each with
//!   `done ID won|lost RUNS MESSAGE`, where RUNS counts how often this process ran the
//!   approved `bank.transfer` of that execution.
//! - `pg-node URL RUNTIME crash JOURNAL before|after SEQ`: runs the crash script with the
//!   ledger connector and dies where it is told to.

use codemode::{CallContext, Runtime, RustConnector, RustTool, ToolError};
use codemode_conformance::journal::{ledger, CrashPoint, CRASH_SCRIPT};
use codemode_postgres::PostgresStore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs of `bank.transfer`, by execution id.
type Runs = Arc<Mutex<HashMap<String, u64>>>;

fn bank(runs: Runs) -> RustConnector {
    RustConnector::new("bank").tool(
        RustTool::new("transfer", move |args: Value, ctx: CallContext| {
            let runs = runs.clone();
            async move {
                *runs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(ctx.execution_id.clone())
                    .or_default() += 1;
                Ok::<Value, ToolError>(json!({ "sent": args["amount"] }))
            }
        })
        .description("Moves money; needs approval.")
        .requires_approval(true),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: pg-node URL RUNTIME serve | crash JOURNAL before|after SEQ");
        std::process::exit(2);
    }
    let store = Arc::new(PostgresStore::connect(&args[1]).await.expect("connect"));
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let builder = Runtime::builder(store.clone(), executor).name(args[2].as_str());
    match args[3].as_str() {
        "serve" => {
            let runs: Runs = Arc::default();
            let runtime = builder
                .connector(bank(runs.clone()))
                .build()
                .expect("runtime");
            serve(runtime, runs).await;
        }
        "crash" if args.len() == 7 => {
            let seq: u64 = args[6].parse().expect("SEQ is a number");
            let crash = match args[5].as_str() {
                "before" => CrashPoint::BeforeEffect(seq),
                "after" => CrashPoint::AfterEffect(seq),
                _ => CrashPoint::None,
            };
            // A short pass deadline allows the short lease (a lease outlives the longest pass).
            let options = codemode_quickjs::QuickJsOptions::default()
                .with_wall_time(Duration::from_millis(150));
            let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(options));
            let runtime = Runtime::builder(store.clone(), executor)
                .name(args[2].as_str())
                .connector(ledger(args[4].clone().into(), crash))
                .lease(Duration::from_millis(300))
                .build()
                .expect("runtime");
            let outcome = runtime.call(CRASH_SCRIPT).await.expect("call");
            println!("{}", serde_json::to_string(&outcome).unwrap_or_default());
        }
        other => {
            eprintln!("unknown mode {other:?}");
            std::process::exit(2);
        }
    }
}

async fn serve(runtime: Runtime, runs: Runs) {
    println!("ready");
    // A blocking read between approvals: nothing else runs on this thread meanwhile.
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else {
            break;
        };
        let Some(id) = line.strip_prefix("approve ") else {
            continue;
        };
        let (verdict, message) = match runtime.approve(id).await {
            Ok(outcome) => ("won", format!("{:?}", outcome.status())),
            Err(e) => ("lost", e.to_string()),
        };
        let count = runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .copied()
            .unwrap_or(0);
        println!("done {id} {verdict} {count} {}", message.replace('\n', " "));
    }
}
