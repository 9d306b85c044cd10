//! Prints the runtime's costs on SQLite, next to a bare SQLite commit on the same file.
//!
//! `cargo bench -p codemode-conformance --bench runtime`

use codemode::{Outcome, Runtime};
use codemode_conformance::Probe;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn show(label: &str, d: Duration) {
    println!("{label:<58} {:>10.1} µs", d.as_secs_f64() * 1e6);
}

async fn time_calls(rt: &Runtime, code: &str, n: usize) -> Duration {
    for _ in 0..5 {
        rt.call(code).await.unwrap();
    }
    let mut xs = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let o = rt.call(code).await.unwrap();
        xs.push(t.elapsed());
        assert!(!matches!(o, Outcome::Error { .. }), "{o:?}");
    }
    median(xs)
}

fn bare_commit(path: &std::path::Path, n: usize) -> Duration {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute(
        "CREATE TABLE IF NOT EXISTS bench_bare (id INTEGER PRIMARY KEY, v TEXT)",
        [],
    )
    .unwrap();
    let mut xs = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.execute(
            "INSERT INTO bench_bare (v) VALUES (?1)",
            [format!("row {i}")],
        )
        .unwrap();
        conn.execute_batch("COMMIT").unwrap();
        xs.push(t.elapsed());
    }
    median(xs)
}

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.db");
        let store = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
        let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
        let probe = Probe::default();
        let rt = Runtime::builder(store, executor)
            .connector(probe.connector("probe"))
            .max_executions(20)
            .build()
            .unwrap();
        let n = 200;

        let trivial = time_calls(&rt, "async () => 1", n).await;
        let empty_loop = time_calls(
            &rt,
            "async () => { let s = 0; for (let i = 0; i < 100; i++) s += await Promise.resolve(i); return s }",
            n,
        )
        .await;
        let reads = time_calls(
            &rt,
            "async () => { let s = 0; for (let i = 0; i < 100; i++) s += (await probe.read({ i })).n; return s }",
            n,
        )
        .await;
        let writes = time_calls(
            &rt,
            "async () => { for (let i = 0; i < 100; i++) await probe.write({ value: i }); return 1 }",
            60,
        )
        .await;

        // Approve-resume: 100 reads replayed from the log, then the approved write runs.
        let gated = "async () => { for (let i = 0; i < 100; i++) await probe.read({ i }); await probe.gated_write({ value: 1 }); return 1 }";
        let mut resumes = Vec::new();
        let mut pauses = Vec::new();
        for i in 0..(n + 5) {
            let t = Instant::now();
            let paused = rt.call(gated).await.unwrap();
            let pause = t.elapsed();
            let t = Instant::now();
            let done = rt.approve(paused.execution_id()).await.unwrap();
            let resume = t.elapsed();
            assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
            if i >= 5 {
                pauses.push(pause);
                resumes.push(resume);
            }
        }
        let resume = median(resumes);
        let pause = median(pauses);
        let bare = bare_commit(&path, 2_000);

        println!("runtime on SQLite ({}), medians", path.display());
        show("bare SQLite commit (BEGIN IMMEDIATE; INSERT; COMMIT)", bare);
        show("execution create + complete: async () => 1", trivial);
        show("100 awaited non-durable promises (sandbox baseline)", empty_loop);
        show("script of 100 durable reads", reads);
        show(
            "  per durable read call ((reads - baseline) / 100)",
            reads.saturating_sub(empty_loop) / 100,
        );
        show("script of 100 durable writes (no approval)", writes);
        show(
            "  per durable write call ((writes - baseline) / 100)",
            writes.saturating_sub(empty_loop) / 100,
        );
        show("100 reads then pause at an approval", pause);
        show("approve-resume: 100 replayed reads + approved write", resume);
        show("  resume minus one trivial execution (replay cost)", resume.saturating_sub(trivial));
    });
}
