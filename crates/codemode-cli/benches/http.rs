//! Medians through HTTP on loopback with a keep-alive client, against `codemode serve`.
//! Run: cargo bench -p codemode-cli --bench http
//!
//! The client is a plain HTTP/1.1 connection on a blocking socket (keep-alive, no pooling,
//! no async runtime), so the figures are the server's latency plus one loopback round trip.
//! The cases are interleaved, one sample of each per round.

#[path = "../tests/common/mod.rs"]
mod common;

use common::KeepAlive;
use serde_json::json;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// One measured case: a name and what one sample does.
struct Case {
    name: &'static str,
    times: Vec<Duration>,
}

impl Case {
    fn new(name: &'static str) -> Self {
        Case {
            name,
            times: Vec::new(),
        }
    }

    fn print(&self) {
        println!("  {:<44} {}", self.name, ms(median(self.times.clone())));
    }
}

/// Runs `code` (which must pause on `create_task`), approves it, then rolls it back so the
/// task list stays empty for the other cases; returns the paused run's and the approval's
/// times.
fn pause_then_approve(c: &mut KeepAlive, code: &str) -> (Duration, Duration) {
    let t = Instant::now();
    let paused = c.run(code);
    let half = t.elapsed();
    let id = paused["executionId"].as_str().unwrap().to_string();
    let done = c.post(&format!("/api/executions/{id}/approve"), &json!({}));
    let whole = t.elapsed();
    assert_eq!(done["status"], "completed", "{done}");
    let undone = c.post(&format!("/api/executions/{id}/rollback"), &json!({}));
    assert_eq!(undone["status"], "rolled_back", "{undone}");
    (half, whole - half)
}

fn main() {
    let iterations: usize = std::env::var("CODEMODE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let mut c = KeepAlive::open(&server.base);

    let runs: [(&str, &str); 3] = [
        ("async () => 1", "async () => 1"),
        (
            "one tasks.list_tasks({})",
            "return await tasks.list_tasks({})",
        ),
        (
            "loop of 100 list_tasks",
            "for (let i = 0; i < 100; i++) await tasks.list_tasks({}); return 1",
        ),
    ];
    let same_code = "return await tasks.create_task({ title: 'bench' })";
    let mut floor = Case::new("GET /healthz (the HTTP floor)");
    let mut cases: Vec<Case> = runs.iter().map(|(name, _)| Case::new(name)).collect();
    let mut pair = Case::new("create_task paused, then approved");
    let mut pauses = Case::new("  of which the paused run");
    let mut approvals = Case::new("  of which the approval");
    let mut fresh = Case::new("  the same with new code each time");

    // Every round takes one sample of every case, so a change in the machine's speed during
    // the run reaches all of them alike. The first rounds warm up and are not counted.
    for round in 0..iterations + 10 {
        let counted = round >= 10;
        let t = Instant::now();
        c.get("/healthz");
        if counted {
            floor.times.push(t.elapsed());
        }
        for ((_, code), case) in runs.iter().zip(cases.iter_mut()) {
            let t = Instant::now();
            let out = c.run(code);
            if counted {
                case.times.push(t.elapsed());
            }
            assert_eq!(out["status"], "completed", "{out}");
            // Deleted, so that no later run's retention prune pays for the 100 log entries
            // of the loop: every insert then prunes one execution of the approval pairs.
            let id = out["executionId"].as_str().unwrap();
            let deleted = c.delete(&format!("/api/executions/{id}"));
            assert_eq!(deleted["deleted"], id, "{deleted}");
        }
        let (paused, approved) = pause_then_approve(&mut c, same_code);
        // Code the server has not seen: its first pass parses and compiles it.
        let novel = format!("return await tasks.create_task({{ title: 'bench {round}' }})");
        let (novel_paused, novel_approved) = pause_then_approve(&mut c, &novel);
        if counted {
            pair.times.push(paused + approved);
            pauses.times.push(paused);
            approvals.times.push(approved);
            fresh.times.push(novel_paused + novel_approved);
        }
    }

    println!("codemode over HTTP (keep-alive, loopback), median of {iterations}:");
    floor.print();
    for case in &cases {
        case.print();
    }
    for case in [&pair, &pauses, &approvals, &fresh] {
        case.print();
    }
}
