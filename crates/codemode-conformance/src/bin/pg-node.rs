//! A node of a multi-node test: one runtime on a PostgreSQL store, driven over stdin.
//!
//! Usage:
//! - `pg-node URL RUNTIME serve`: reads `approve ID` lines and answers each with
//!   `done ID won|lost RUNS MESSAGE`, where RUNS counts how often this process ran the
//!   approved `bank.transfer` of that execution.
//! - `pg-node URL RUNTIME crash JOURNAL before|after SEQ`: runs the crash script with the
//!   ledger connector and dies where it is told to.
//! - `pg-node URL RUNTIME listen EFFECTS NAME`: the load test's node (driven by `pg-load`).
//!   Prints `listening ADDR`, then serves a line protocol on that loopback address, any
//!   number of connections at once: `run CODE` (the code on one line) and `approve ID`, each
//!   answered with one line of JSON, the `Outcome` or `{"status":"refused","error":…}`. Its
//!   `shop` connector has `reserve` (a durable write, no approval) and `ship` (needs
//!   approval), which appends `effect KEY NAME` to the file EFFECTS for every real run
//!   (never with `PG_NODE_FAULT=lose`, twice with `PG_NODE_FAULT=double`: planted faults).

use codemode::{CallContext, Runtime, RustConnector, RustTool, ToolError};
use codemode_conformance::journal::{ledger, CrashPoint, CRASH_SCRIPT};
use codemode_postgres::PostgresStore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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

/// One line appended to `path` in one `write` (O_APPEND: lines from both nodes never mix).
fn append_line(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(format!("{line}\n").as_bytes())
}

/// The load test's connector: two durable writes and an approval-gated action whose every
/// real run is recorded in `effects` under its idempotency key.
fn shop(effects: PathBuf, node: String) -> RustConnector {
    RustConnector::new("shop")
        .tool(
            RustTool::new("reserve", |args: Value, ctx: CallContext| async move {
                Ok::<Value, ToolError>(
                    json!({ "item": args["item"], "key": ctx.idempotency_key() }),
                )
            })
            .description("Reserves an item; a write that needs no approval.")
            .requires_approval(false),
        )
        .tool(
            RustTool::new("ship", move |_args: Value, ctx: CallContext| {
                let effects = effects.clone();
                let node = node.clone();
                async move {
                    let key = ctx.idempotency_key();
                    // A planted fault, so a test can show the driver's counts catch it.
                    let times = match std::env::var("PG_NODE_FAULT").as_deref() {
                        Ok("lose") => 0,
                        Ok("double") => 2,
                        _ => 1,
                    };
                    for _ in 0..times {
                        append_line(&effects, &format!("effect {key} {node}"))
                            .map_err(|e| ToolError::new(format!("effects file: {e}")))?;
                    }
                    Ok::<Value, ToolError>(json!({ "shipped": key }))
                }
            })
            .description("Ships the reserved items; needs approval.")
            .requires_approval(true),
        )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: pg-node URL RUNTIME serve | crash JOURNAL before|after SEQ | listen EFFECTS NAME");
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
                .with_wall_time(codemode_conformance::journal::CHILD_WALL_TIME);
            let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(options));
            let runtime = Runtime::builder(store.clone(), executor)
                .name(args[2].as_str())
                .connector(ledger(args[4].clone().into(), crash))
                .lease(codemode_conformance::journal::CHILD_LEASE)
                .build()
                .expect("runtime");
            let outcome = runtime.call(CRASH_SCRIPT).await.expect("call");
            println!("{}", serde_json::to_string(&outcome).unwrap_or_default());
        }
        "listen" if args.len() == 6 => {
            let runtime = builder
                .connector(shop(args[4].clone().into(), args[5].clone()))
                // The driver counts every execution at the end: none may be pruned meanwhile.
                .max_executions(usize::MAX)
                .build()
                .expect("runtime");
            listen(Arc::new(runtime)).await;
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

async fn listen(runtime: Arc<Runtime>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    println!(
        "listening {}",
        listener.local_addr().expect("local address")
    );
    let _ = std::io::stdout().flush();
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let _ = socket.set_nodelay(true);
        tokio::spawn(connection(runtime.clone(), socket));
    }
}

/// One connection: requests answered in order, one line each.
async fn connection(runtime: Arc<Runtime>, socket: tokio::net::TcpStream) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let result = if let Some(code) = line.strip_prefix("run ") {
            runtime.call(code).await
        } else if let Some(id) = line.strip_prefix("approve ") {
            runtime.approve(id.trim()).await
        } else {
            let answer =
                json!({ "status": "refused", "error": format!("unknown request {line:?}") });
            if write
                .write_all(format!("{answer}\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
            continue;
        };
        let answer = match result {
            Ok(outcome) => serde_json::to_value(&outcome).unwrap_or_default(),
            Err(e) => json!({ "status": "refused", "error": e.to_string() }),
        };
        if write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}
