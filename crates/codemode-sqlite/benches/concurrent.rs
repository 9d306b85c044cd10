//! Commits per second with N tasks committing at once on one store (each to an execution of
//! its own, one entry per commit), on a multi-thread tokio runtime: what group commit is for.
//!
//! Run with `cargo bench -p codemode-sqlite --bench concurrent`. `CODEMODE_BENCH_SECONDS`
//! (default 2) is how long each case runs; `CODEMODE_BENCH_TASKS` (default `1,8,64`) the
//! task counts. Each count runs with `synchronous=NORMAL` (the default) and `FULL`.

use codemode::{Commit, EntryState, Execution, ExecutionStatus, Lease, LogEntry, Store};
use codemode_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RT: &str = "bench";

fn main() {
    let seconds: f64 = std::env::var("CODEMODE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let tasks: Vec<usize> = std::env::var("CODEMODE_BENCH_TASKS")
        .unwrap_or_else(|_| "1,8,64".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for full in [false, true] {
        for &n in &tasks {
            let dir = tempfile::tempdir().expect("temp dir");
            let options = SqliteOptions {
                synchronous_full: full,
                ..SqliteOptions::default()
            };
            let store =
                Arc::new(SqliteStore::open_with(dir.path().join("c.db"), &options).expect("open"));
            let (rate, p50, p99) = rt.block_on(run(store, n, Duration::from_secs_f64(seconds)));
            println!(
                "{n:>3} tasks, synchronous={:<6} {rate:>9.0} commits/s   p50 {:>8.1} µs   p99 {:>8.1} µs",
                if full { "FULL" } else { "NORMAL" },
                p50.as_secs_f64() * 1e6,
                p99.as_secs_f64() * 1e6,
            );
        }
    }
}

/// Commits/s over `length`, and the median and 99th percentile of one commit.
async fn run(store: Arc<SqliteStore>, n: usize, length: Duration) -> (f64, Duration, Duration) {
    let lease = Lease {
        owner: "node".into(),
        until_ms: i64::MAX / 2,
    };
    for t in 0..n {
        store
            .insert_execution(RT, &execution(&format!("e{t}")), &lease, 1_000)
            .await
            .expect("insert");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|t| {
            let (store, stop, count) = (store.clone(), stop.clone(), count.clone());
            tokio::spawn(async move {
                let id = format!("e{t}");
                let mut times = Vec::new();
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let c = Commit {
                        execution_id: id.clone(),
                        owner: Some("node".into()),
                        entries: vec![entry(seq)],
                        transition: None,
                        clock: None,
                    };
                    let began = Instant::now();
                    assert!(store.commit(RT, &c).await.expect("commit"));
                    times.push(began.elapsed());
                    count.fetch_add(1, Ordering::Relaxed);
                    seq += 1;
                }
                times
            })
        })
        .collect();
    // A blocking sleep on the bench's own thread: tasks whose store calls never yield (SQL
    // run inline) would keep the workers from driving tokio's timer.
    std::thread::sleep(length);
    stop.store(true, Ordering::Relaxed);
    let mut times = Vec::new();
    for h in handles {
        times.extend(h.await.expect("task"));
    }
    let elapsed = start.elapsed();
    times.sort();
    let at = |q: f64| {
        times
            .get(((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    (
        count.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(),
        at(0.5),
        at(0.99),
    )
}

fn execution(id: &str) -> Execution {
    Execution {
        id: id.into(),
        code: "async () => { const r = await github.list_issues({repo: 'x'}); return r; }".into(),
        status: ExecutionStatus::Running,
        log: vec![],
        result: None,
        error: None,
        logs: vec![],
        connectors: vec!["github".into()],
        created_at: 1,
        updated_at: 1,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    }
}

fn entry(seq: u64) -> LogEntry {
    LogEntry {
        seq,
        connector: "github".into(),
        method: "list_issues".into(),
        args: json!({"owner": "acme", "repo": "widgets", "state": "open"}),
        result: Some(json!([{"number": seq, "title": "a small issue"}])),
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
