//! A real Prometheus server scrapes a running `codemode serve` (with a bearer token) and a
//! PromQL query through its HTTP API returns the executions the test produced.
//!
//! Needs Debian's `prometheus` package (`.ci/run` installs it); without the binary the test
//! prints SKIPPED, with `CI` set it fails instead.

mod common;

use common::{get, serve};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// A Prometheus process, killed on drop.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nothing listens on now (Prometheus cannot be told to pick one itself).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Asks `check` every 200 ms until it answers, for at most `limit`.
async fn until<T>(limit: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(v) = check().await {
            return Some(v);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_execution_count() {
    if !std::path::Path::new(PROMETHEUS).exists() {
        return codemode_testkit::missing(PROMETHEUS, "apt-get install prometheus");
    }
    let dir = tempfile::tempdir().unwrap();
    let token = "metrics-scrape-token";
    let server = serve(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--token-env",
            "METRICS_TEST_TOKEN",
        ],
        &[("METRICS_TEST_TOKEN", token)],
    );
    let base = server.base.clone();
    let c = common::client();

    // Without the token, /metrics is refused like the rest of the API.
    let (status, _) = get(&c, format!("{base}/metrics")).await;
    assert_eq!(status, 401);

    // Three runs: two complete, one pauses for approval.
    let run = |code: &'static str| {
        let (c, base) = (c.clone(), base.clone());
        async move {
            let r = c
                .post(format!("{base}/api/run"))
                .bearer_auth(token)
                .json(&json!({ "code": code }))
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()
        }
    };
    assert_eq!(run("return 1").await["status"], "completed");
    assert_eq!(
        run("await tasks.list_tasks({}); return 2").await["status"],
        "completed"
    );
    let paused = run("await tasks.create_task({ title: 'x' }); return 3").await;
    assert_eq!(paused["status"], "paused", "{paused}");

    let target = base.trim_start_matches("http://");
    let port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: codemode\n    \
             authorization:\n      credentials: {token}\n    static_configs:\n      \
             - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Prometheus(
        Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );

    let query = |q: &'static str| {
        let c = c.clone();
        async move {
            let q = codemode_server::client::enc(q);
            let url = format!("http://127.0.0.1:{port}/api/v1/query?query={q}");
            let r = c.get(url).send().await.ok()?;
            let v: Value = r.json().await.ok()?;
            let value = v["data"]["result"][0]["value"][1].as_str()?.to_string();
            Some(value)
        }
    };
    let started = until(Duration::from_secs(60), async || {
        query("codemode_executions_started_total{job=\"codemode\"}").await
    })
    .await;
    assert_eq!(
        started.as_deref(),
        Some("3"),
        "Prometheus never returned the execution count"
    );
    let completed = query("codemode_execution_status_changes_total{status=\"completed\"}").await;
    assert_eq!(completed.as_deref(), Some("2"));
    let pending = query("codemode_pending_approvals").await;
    assert_eq!(pending.as_deref(), Some("1"));
    let calls =
        query("sum(codemode_connector_calls_total{connector=\"tasks\",outcome=\"ok\"})").await;
    assert_eq!(calls.as_deref(), Some("1"));
    assert_eq!(query("up{job=\"codemode\"}").await.as_deref(), Some("1"));
}
