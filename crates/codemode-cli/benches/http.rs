//! Medians through HTTP on loopback with a keep-alive client, against `codemode serve`.
//! Run: cargo bench -p codemode-cli --bench http
//!
//! The client is a plain HTTP/1.1 connection on a blocking socket (keep-alive, no pooling,
//! no async runtime), so the figures are the server's latency plus one loopback round trip.

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

fn main() {
    let iterations: usize = std::env::var("CODEMODE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let mut c = KeepAlive::open(&server.base);

    let cases: [(&str, &str); 3] = [
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
    println!("codemode over HTTP (keep-alive, loopback), median of {iterations}:");
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        c.get("/healthz");
        times.push(t.elapsed());
    }
    println!(
        "  {:<36} {}",
        "GET /healthz (the HTTP floor)",
        ms(median(times))
    );
    for (name, code) in cases {
        for _ in 0..10 {
            assert_eq!(c.run(code)["status"], "completed");
        }
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            let out = c.run(code);
            times.push(t.elapsed());
            assert_eq!(out["status"], "completed", "{out}");
        }
        println!("  {name:<36} {}", ms(median(times)));
    }

    let code = "return await tasks.create_task({ title: 'bench' })";
    let mut times = Vec::with_capacity(iterations);
    let mut pauses = Vec::with_capacity(iterations);
    let mut approvals = Vec::with_capacity(iterations);
    for i in 0..iterations + 10 {
        let t = Instant::now();
        let paused = c.run(code);
        let half = t.elapsed();
        let id = paused["executionId"].as_str().unwrap().to_string();
        let done = c.post(&format!("/api/executions/{id}/approve"), &json!({}));
        if i >= 10 {
            times.push(t.elapsed());
            pauses.push(half);
            approvals.push(t.elapsed() - half);
        }
        assert_eq!(done["status"], "completed", "{done}");
    }
    println!(
        "  {:<36} {}",
        "create_task paused, then approved",
        ms(median(times))
    );
    println!(
        "  {:<36} {}",
        "  of which the paused run",
        ms(median(pauses))
    );
    println!(
        "  {:<36} {}",
        "  of which the approval",
        ms(median(approvals))
    );
}
