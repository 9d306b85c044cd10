//! Medians through HTTP on loopback with a keep-alive client, against `codemode serve`.
//! Run: cargo bench -p codemode-cli --bench http

#[path = "../tests/common/mod.rs"]
mod common;

use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn run(c: &reqwest::Client, base: &str, code: &str) -> Value {
    c.post(format!("{base}/api/run"))
        .json(&json!({ "code": code }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::main]
async fn main() {
    let iterations: usize = std::env::var("CODEMODE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let base = server.base.clone();
    let c = common::client();

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
    for (name, code) in cases {
        for _ in 0..10 {
            assert_eq!(run(&c, &base, code).await["status"], "completed");
        }
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            let out = run(&c, &base, code).await;
            times.push(t.elapsed());
            assert_eq!(out["status"], "completed", "{out}");
        }
        println!("  {name:<36} {}", ms(median(times)));
    }

    let code = "return await tasks.create_task({ title: 'bench' })";
    let mut times = Vec::with_capacity(iterations);
    for i in 0..iterations + 10 {
        let t = Instant::now();
        let paused = run(&c, &base, code).await;
        let id = paused["executionId"].as_str().unwrap();
        let done: Value = c
            .post(format!("{base}/api/executions/{id}/approve"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if i >= 10 {
            times.push(t.elapsed());
        }
        assert_eq!(done["status"], "completed", "{done}");
    }
    println!(
        "  {:<36} {}",
        "create_task paused, then approved",
        ms(median(times))
    );
}
