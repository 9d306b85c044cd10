//! Many paused executions: the process does not keep them in memory, and `GET /api/pending`
//! pages through them quickly.
//!
//! `CODEMODE_SCALE_PAUSED` executions (default 2,000; the target is 10,000) are paused
//! through a real runtime on SQLite, then listed 50 at a time over HTTP. The figures are
//! printed (`--nocapture`); the time bound (p50 ≤ 20 ms per page) is checked only at 10,000
//! or more in a release build, the memory bound (≤ 50 MB of RSS growth) at every size.

use codemode::{Outcome, Runtime, RustConnector, RustTool};
use codemode_server::{router, ServerOptions};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAGE: usize = 50;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.replace(['_', ','], "").parse().ok())
        .unwrap_or(default)
}

/// Resident set size of this process, in bytes (0 where `/proc` is missing).
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn runtime(dir: &std::path::Path) -> Runtime {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    Runtime::builder(store, executor)
        .connector(RustConnector::new("probe").tool(
            RustTool::new("write", |_args, _ctx| async { Ok(json!(1)) }).requires_approval(true),
        ))
        .build()
        .unwrap()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_executions_cost_no_memory_and_pending_pages_stay_fast() {
    let n = count("CODEMODE_SCALE_PAUSED", 2_000);
    let dir = tempfile::tempdir().unwrap();
    let rt = Arc::new(runtime(dir.path()));
    let code = "async () => { await probe.write({ n: 1 }); return 1 }";
    let pause = |rt: Arc<Runtime>| async move {
        let out = rt.call(code).await.unwrap();
        assert!(matches!(out, Outcome::Paused { .. }), "{out:?}");
    };
    // Warm up (sandbox stock, statement caches, page cache) before the baseline.
    for _ in 0..100 {
        pause(rt.clone()).await;
    }
    let before = rss();
    let started = Instant::now();
    // Four callers at a time, as a server would see them.
    let mut left = n;
    while left > 0 {
        let batch = left.min(4);
        let runs: Vec<_> = (0..batch)
            .map(|_| tokio::spawn(pause(rt.clone())))
            .collect();
        for r in runs {
            r.await.unwrap();
        }
        left -= batch;
    }
    let pausing = started.elapsed();
    let grown = rss().saturating_sub(before);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    // The peer's address, for the loopback rule of a server without tokens.
    let app = router(rt.clone(), ServerOptions::default())
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();

    let mut times = Vec::new();
    let mut listed = 0;
    let mut next = format!("{base}/api/pending?limit={PAGE}");
    loop {
        let began = Instant::now();
        let answer = http.get(&next).send().await.unwrap();
        assert!(answer.status().is_success(), "{}", answer.status());
        let link = answer
            .headers()
            .get("link")
            .map(|l| l.to_str().unwrap().to_string());
        let page: Vec<Value> = answer.json().await.unwrap();
        times.push(began.elapsed());
        listed += page.len();
        let Some(link) = link else { break };
        let query = link
            .strip_prefix('<')
            .and_then(|l| l.split_once('>'))
            .map(|(q, _)| q.to_string())
            .unwrap();
        next = format!("{base}/api/pending{query}");
    }
    let whole = Instant::now();
    let all: Vec<Value> = http
        .get(format!("{base}/api/pending"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let whole = whole.elapsed();
    times.sort();
    let (p50, p99) = (quantile(&times, 0.5), quantile(&times, 0.99));
    println!(
        "{n} paused executions: paused in {:.1} s ({:.0}/s); RSS +{:.1} MB; \
         {} pages of {PAGE}: p50 {:.2} ms, p99 {:.2} ms; the whole list at once: {:.1} ms",
        pausing.as_secs_f64(),
        n as f64 / pausing.as_secs_f64(),
        grown as f64 / 1e6,
        times.len(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        whole.as_secs_f64() * 1e3,
    );
    assert_eq!(listed, n + 100, "every pending action, once");
    assert_eq!(all.len(), n + 100);
    assert!(
        grown <= 50 * 1024 * 1024,
        "RSS grew {grown} bytes over {n} paused executions"
    );
    if n >= 10_000 && !cfg!(debug_assertions) {
        assert!(p50 <= Duration::from_millis(20), "p50 {p50:?} per page");
    }
}
