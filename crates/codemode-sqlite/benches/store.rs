//! Medians of the store's hot operations, next to a bare SQLite commit on the same disk.
//!
//! Run with `cargo bench -p codemode-sqlite`. Every figure is one operation, timed alone.

use codemode::{
    Commit, EntryState, Execution, ExecutionStatus, Lease, LogEntry, Store, Transition,
};
use codemode_sqlite::SqliteStore;
use serde_json::json;
use std::time::{Duration, Instant};

const RT: &str = "bench";
const N: usize = 3_000;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let store = SqliteStore::open(dir.path().join("store.db")).expect("open");

    let bare_conn = bare_db(&dir.path().join("bare.db"));
    report("bare BEGIN IMMEDIATE; INSERT; COMMIT", bare(&bare_conn, 1));
    report(
        "bare BEGIN IMMEDIATE; 10 INSERTs; COMMIT",
        bare(&bare_conn, 10),
    );

    let lease = Lease {
        owner: "node".into(),
        until_ms: i64::MAX / 2,
    };
    rt.block_on(store.insert_execution(RT, &execution("one"), &lease, 50))
        .unwrap();
    report(
        "commit, 1 entry",
        measure_prepared(
            |i| commit("one", vec![entry(i as u64)]),
            |c| assert!(rt.block_on(store.commit(RT, c)).unwrap()),
        ),
    );

    rt.block_on(store.insert_execution(RT, &execution("ten"), &lease, 50))
        .unwrap();
    report(
        "commit, 10 entries",
        measure_prepared(
            |i| commit("ten", (0..10).map(|k| entry((i * 10 + k) as u64)).collect()),
            |c| assert!(rt.block_on(store.commit(RT, c)).unwrap()),
        ),
    );

    let expired = Lease {
        owner: "node".into(),
        until_ms: 0,
    };
    rt.block_on(store.insert_execution(RT, &execution("claimed"), &expired, 50))
        .unwrap();
    report(
        "claim (expired running lease)",
        measure(N, |i| {
            let l = Lease {
                owner: format!("n{}", i % 2),
                until_ms: i as i64,
            };
            assert!(rt
                .block_on(store.claim(
                    RT,
                    "claimed",
                    ExecutionStatus::Running,
                    &l,
                    i as i64 + 1,
                    &["github".to_string()]
                ))
                .unwrap()
                .is_won());
        }),
    );

    // A run from start to end: inserted `running` (with the retention prune), then moved to `to`.
    let run = |id: &str, to: ExecutionStatus| {
        rt.block_on(store.insert_execution(RT, &execution(id), &lease, 50))
            .unwrap();
        let c = Commit {
            transition: Some(Transition::new(ExecutionStatus::Running, to, 2)),
            ..commit(id, vec![])
        };
        assert!(rt.block_on(store.commit(RT, &c)).unwrap());
    };
    report(
        "insert_execution + commit to completed",
        measure(N, |i| run(&format!("run-{i}"), ExecutionStatus::Completed)),
    );
    // Paused executions wait up to a day for a person; retention must not walk them all.
    for i in 0..1_000 {
        run(&format!("paused-{i}"), ExecutionStatus::Paused);
    }
    report(
        "the same with 1,000 paused executions",
        measure(N, |i| {
            run(&format!("run-paused-{i}"), ExecutionStatus::Completed)
        }),
    );

    let mut hundred = execution("hundred");
    hundred.log = (0..100).map(entry).collect();
    rt.block_on(store.insert_execution(RT, &hundred, &lease, 50))
        .unwrap();
    report(
        "execution() with 100 entries",
        measure(N, |_| {
            let e = rt
                .block_on(store.execution(RT, "hundred"))
                .unwrap()
                .unwrap();
            assert_eq!(e.log.len(), 100);
        }),
    );
}

/// A plain WAL file with `synchronous=NORMAL` and one small table, for the reference figure.
fn bare_db(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("open bare");
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .expect("wal");
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "synchronous", "NORMAL")
        .expect("sync");
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .expect("table");
    conn
}

/// `BEGIN IMMEDIATE`, `rows` small inserts, `COMMIT`.
fn bare(conn: &rusqlite::Connection, rows: usize) -> (Duration, Duration) {
    measure(N, |i| {
        conn.prepare_cached("BEGIN IMMEDIATE")
            .unwrap()
            .execute([])
            .unwrap();
        for k in 0..rows {
            conn.prepare_cached("INSERT INTO t (v) VALUES (?1)")
                .unwrap()
                .execute([format!("row {i} {k} {}", "x".repeat(100))])
                .unwrap();
        }
        conn.prepare_cached("COMMIT").unwrap().execute([]).unwrap();
    })
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

fn commit(id: &str, entries: Vec<LogEntry>) -> Commit {
    Commit {
        execution_id: id.into(),
        owner: Some("node".into()),
        entries,
        transition: None,
        clock: None,
    }
}

/// Like [`measure`], with each call's input built beforehand so that only the call is timed.
fn measure_prepared<T>(make: impl Fn(usize) -> T, mut f: impl FnMut(&T)) -> (Duration, Duration) {
    let inputs: Vec<T> = (0..N + N / 10).map(make).collect();
    measure(N, |i| f(&inputs[i]))
}

/// Median and 90th percentile of `n` timed calls, after `n / 10` warm-up calls.
fn measure(n: usize, mut f: impl FnMut(usize)) -> (Duration, Duration) {
    let warm = n / 10;
    for i in 0..warm {
        f(i);
    }
    let mut times: Vec<Duration> = (warm..warm + n)
        .map(|i| {
            let start = Instant::now();
            f(i);
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[n / 2], times[n * 9 / 10])
}

fn report(name: &str, (median, p90): (Duration, Duration)) {
    println!(
        "{name:<42} median {:>8.1} µs   p90 {:>8.1} µs",
        median.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
}
