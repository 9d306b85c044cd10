//! Medians of the hot operations on PostgreSQL, next to the same on SQLite.
//!
//! Run with `cargo bench -p codemode-postgres` (a server at `CODEMODE_TEST_POSTGRES_URL` or
//! the default test server; without one only SQLite is measured). Each figure is one
//! operation timed alone, from one client on this machine (loopback).

use codemode::{
    CallContext, Commit, EntryState, Execution, ExecutionStatus, Lease, LogEntry, Outcome, Runtime,
    RustConnector, RustTool, Store, ToolError,
};
use codemode_postgres::{PostgresOptions, PostgresStore, ScratchDatabase};
use codemode_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RT: &str = "bench";
const N: usize = 2_000;
const CALLS: usize = 300;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let sqlite: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("bench.db")).expect("sqlite"));
        let scratch = ScratchDatabase::for_tests("the PostgreSQL bench")
            .await
            .ok()
            .flatten();
        let connect = |synchronous_commit: bool| {
            let options = PostgresOptions {
                synchronous_commit,
                ..PostgresOptions::default()
            };
            let url = scratch.as_ref().map(|db| db.url().to_string());
            async move {
                match url {
                    Some(db) => Some(Arc::new(
                        PostgresStore::connect_with(&db, &options)
                            .await
                            .expect("pg"),
                    ) as Arc<dyn Store>),
                    None => None,
                }
            }
        };
        let postgres = connect(true).await;
        let relaxed = connect(false).await;
        println!(
            "{:<36} {:>12} {:>14} {:>12}",
            "median of one", "PostgreSQL", "PG sync off", "SQLite"
        );
        for (name, op) in [
            ("commit, 1 entry (lease checked)", Op::Commit),
            ("claim (expired running lease)", Op::Claim),
            ("runtime.call, one durable write", Op::Call),
        ] {
            let pg = measure(op, &postgres, "").await;
            let off = measure(op, &relaxed, "-async").await;
            let lite = measure(op, &Some(sqlite.clone()), "").await;
            println!("{name:<36} {pg:>12} {off:>14} {lite:>12}");
        }
    });
}

async fn measure(op: Op, store: &Option<Arc<dyn Store>>, suffix: &str) -> String {
    match store {
        Some(store) => format!("{:.1?}", op.measure(store.clone(), suffix).await),
        None => "skipped".to_string(),
    }
}

#[derive(Clone, Copy)]
enum Op {
    Commit,
    Claim,
    Call,
}

impl Op {
    async fn measure(self, store: Arc<dyn Store>, suffix: &str) -> Duration {
        let id = |base: &str| format!("{base}{suffix}");
        let long = Lease {
            owner: "node".into(),
            until_ms: i64::MAX / 2,
        };
        let mut times = Vec::new();
        match self {
            Op::Commit => {
                store
                    .insert_execution(RT, &execution(&id("commit")), &long, 50)
                    .await
                    .unwrap();
                for i in 0..N {
                    let c = Commit {
                        execution_id: id("commit"),
                        owner: Some("node".into()),
                        entries: vec![entry(i as u64)],
                        transition: None,
                        clock: None,
                    };
                    let t = Instant::now();
                    assert!(store.commit(RT, &c).await.unwrap());
                    times.push(t.elapsed());
                }
            }
            Op::Claim => {
                let expired = Lease {
                    owner: "node".into(),
                    until_ms: 0,
                };
                store
                    .insert_execution(RT, &execution(&id("claim")), &expired, 50)
                    .await
                    .unwrap();
                // Each claim's lease has ended by the next one's `now`.
                for i in 0..N as i64 {
                    let lease = Lease {
                        owner: "node".into(),
                        until_ms: i + 1,
                    };
                    let t = Instant::now();
                    let won = store
                        .claim(
                            RT,
                            &id("claim"),
                            ExecutionStatus::Running,
                            &lease,
                            i + 1,
                            &available(),
                        )
                        .await
                        .unwrap()
                        .is_won();
                    times.push(t.elapsed());
                    assert!(won);
                }
            }
            Op::Call => {
                let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
                let runtime = Runtime::builder(store, executor)
                    .name(id("bench-call"))
                    .connector(writer())
                    .build()
                    .unwrap();
                let code = "async () => { const r = await store.put({ value: 1 }); return r; }";
                for _ in 0..CALLS {
                    let t = Instant::now();
                    let outcome = runtime.call(code).await.unwrap();
                    times.push(t.elapsed());
                    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
                }
            }
        }
        times.sort();
        times[times.len() / 2]
    }
}

/// A write that needs no approval: its `executing` mark is committed before it runs.
fn writer() -> RustConnector {
    RustConnector::new("store").tool(
        RustTool::new("put", |args: Value, _ctx: CallContext| async move {
            Ok::<Value, ToolError>(json!({ "stored": args["value"] }))
        })
        .description("Stores a value.")
        .requires_approval(false),
    )
}

fn execution(id: &str) -> Execution {
    Execution {
        id: id.into(),
        code: "async () => 1".into(),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: Vec::new(),
        connectors: vec!["probe".into()],
        created_at: 0,
        updated_at: 0,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    }
}

/// The connectors [`execution`] records, all available to a claim.
fn available() -> Vec<String> {
    execution("").connectors
}

fn entry(seq: u64) -> LogEntry {
    LogEntry {
        seq,
        connector: "probe".into(),
        method: "write".into(),
        args: json!({ "value": seq }),
        result: Some(json!({ "ok": true })),
        error: None,
        requires_approval: false,
        ephemeral: false,
        read_only: false,
        state: EntryState::Applied,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    }
}
