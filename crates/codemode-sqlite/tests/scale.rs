//! Many completed executions with retention off: starting and finishing a run costs what it
//! costs on an empty file.
//!
//! `CODEMODE_SCALE_COMPLETED` executions (default 20,000; the target is 1,000,000), each with
//! a log entry, are written straight into the file; the cost of `insert_execution` followed
//! by the commit that completes it is measured before and after. The figures are printed
//! (`--nocapture`); the bound (within 20%, checked as ≤ 1.5× to leave room for a noisy
//! machine) only at 1,000,000 or more in a release build.

mod common;

use codemode::{Commit, EntryState, ExecutionStatus, Store, Transition};
use common::{entry, execution, lease, store, RT};
use std::time::{Duration, Instant};

const RUNS: usize = 2_000;
const FAR: i64 = i64::MAX / 2;
/// Retention off: no terminal execution is ever pruned.
const KEEP_ALL: usize = usize::MAX;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.replace(['_', ','], "").parse().ok())
        .unwrap_or(default)
}

/// Median and 90th percentile of `RUNS` insert + complete pairs named `{tag}-{i}`.
async fn runs(s: &codemode_sqlite::SqliteStore, tag: &str, at: i64) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..RUNS + RUNS / 10 {
        let id = format!("{tag}-{i}");
        let began = Instant::now();
        s.insert_execution(RT, &execution(&id, at), &lease("n", FAR), KEEP_ALL)
            .await
            .unwrap();
        let done = Commit {
            execution_id: id,
            owner: Some("n".into()),
            entries: vec![entry(0, EntryState::Applied)],
            transition: Some(Transition::new(
                ExecutionStatus::Running,
                ExecutionStatus::Completed,
                at + 1,
            )),
            clock: None,
        };
        assert!(s.commit(RT, &done).await.unwrap());
        if i >= RUNS / 10 {
            times.push(began.elapsed());
        }
    }
    times.sort();
    (times[RUNS / 2], times[RUNS * 9 / 10])
}

/// Writes `n` completed executions (one entry each) into the store's file at `path`, on a
/// connection of its own, in transactions of 100,000.
fn fill(path: &std::path::Path, n: usize) {
    let mut c = rusqlite::Connection::open(path).unwrap();
    c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(100_000);
        {
            let tx = c.transaction().unwrap();
            tx.execute(
                "WITH RECURSIVE k(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM k WHERE i < ?2)
                 INSERT INTO executions (runtime, id, code, status, result, logs, connectors,
                                         created_at, updated_at)
                 SELECT ?3, 'old-' || i, 'async () => 1', 'completed', '1', '[]', '[\"github\"]',
                        i, i + 1 FROM k",
                rusqlite::params![done + 1, done + chunk, RT],
            )
            .unwrap();
            tx.execute(
                "WITH RECURSIVE k(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM k WHERE i < ?2)
                 INSERT INTO log_entries (runtime, execution_id, seq, connector, method, args,
                                          result, requires_approval, ephemeral, state)
                 SELECT ?3, 'old-' || i, 0, 'github', 'create_issue', '{\"title\":\"t\"}',
                        '{\"number\":1}', 0, 0, 'applied' FROM k",
                rusqlite::params![done + 1, done + chunk, RT],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        done += chunk;
    }
}

#[tokio::test]
async fn completed_executions_leave_the_cost_of_a_run_unchanged() {
    let n = count("CODEMODE_SCALE_COMPLETED", 20_000);
    let (_dir, path, s) = store();
    // Created after every filled row (whose created_at runs 1..=n), as a new run would be.
    let now = n as i64 + 10;
    let (empty_p50, empty_p90) = runs(&s, "empty", now).await;
    let filling = Instant::now();
    fill(&path, n);
    let filled = filling.elapsed();
    let (full_p50, full_p90) = runs(&s, "full", now + 10).await;
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    let ratio = full_p50.as_secs_f64() / empty_p50.as_secs_f64();
    println!(
        "insert + complete, retention off: empty file p50 {:.1} µs p90 {:.1} µs; \
         with {n} completed executions ({:.0} MB, written in {:.1} s) p50 {:.1} µs \
         p90 {:.1} µs; ratio of medians {ratio:.2}",
        empty_p50.as_secs_f64() * 1e6,
        empty_p90.as_secs_f64() * 1e6,
        size as f64 / 1e6,
        filled.as_secs_f64(),
        full_p50.as_secs_f64() * 1e6,
        full_p90.as_secs_f64() * 1e6,
    );
    let listed = s.executions(RT, Some(1), None).await.unwrap();
    assert_eq!(listed.len(), 1);
    if n >= 1_000_000 && !cfg!(debug_assertions) {
        assert!(ratio <= 1.5, "a run costs {ratio:.2}× with {n} completed");
    }
}
