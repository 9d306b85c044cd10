//! Load + index of the GitHub REST spec (goal: under 300 ms), and the per-call overhead of the
//! connector over a raw HTTP request to the same loopback server.
//!
//! `cargo bench -p codemode-openapi`

#[path = "../tests/support/mod.rs"]
mod support;

use codemode::{CallContext, Connector};
use codemode_openapi::{OpenApiConfig, OpenApiConnector};
use serde_json::json;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn load_and_index() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let path = dir.join("@octokit/openapi/generated/api.github.com.json");
    let path = path.to_str().unwrap().to_string();
    let bytes = std::fs::read(&path).unwrap();
    let mut parse = Vec::new();
    let mut full = Vec::new();
    let mut compile = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        parse.push(t.elapsed());
        drop(v);
        let t = Instant::now();
        let c = OpenApiConnector::from_spec(OpenApiConfig::new("github", path.clone()))
            .await
            .unwrap();
        let tools = c.tools();
        full.push(t.elapsed());
        assert_eq!(tools.len(), 1_224);
        let t = Instant::now();
        for tool in &tools {
            jsonschema::validator_for(&tool.input_schema).unwrap();
        }
        compile.push(t.elapsed());
    }
    println!(
        "github spec ({} MB, 1,223 operations): load + index median {:?} (min {:?}); of which JSON parse median {:?}, input schemas compiled (checked) median {:?}",
        bytes.len() / 1_000_000,
        median(full.clone()),
        full.iter().min().unwrap(),
        median(parse),
        median(compile),
    );
}

async fn call_overhead() {
    let server = support::start().await;
    let spec = support::spec_for(&server.base).to_string();
    let c = OpenApiConnector::from_bytes(OpenApiConfig::new("items", "inline"), spec.as_bytes())
        .unwrap();
    let ctx = CallContext {
        execution_id: "bench".into(),
        seq: 0,
    };
    c.execute("createItem", json!({"body": {"name": "pen"}}), ctx.clone())
        .await
        .unwrap();
    let raw = reqwest::Client::new();
    let url = format!("{}/items/1", server.base);
    const N: usize = 2_000;
    for _ in 0..200 {
        raw.get(&url).send().await.unwrap().bytes().await.unwrap();
        c.execute("getItem", json!({"id": 1}), ctx.clone())
            .await
            .unwrap();
    }
    let mut raw_times = Vec::with_capacity(N);
    let mut conn_times = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        let body = raw.get(&url).send().await.unwrap().bytes().await.unwrap();
        let _: serde_json::Value = serde_json::from_slice(&body).unwrap();
        raw_times.push(t.elapsed());
        let t = Instant::now();
        c.execute("getItem", json!({"id": 1}), ctx.clone())
            .await
            .unwrap();
        conn_times.push(t.elapsed());
    }
    let (r, k) = (median(raw_times), median(conn_times));
    println!(
        "per call over loopback ({N} calls, interleaved): raw reqwest + JSON parse median {r:?}, connector median {k:?}, overhead {:?}",
        k.saturating_sub(r)
    );
}

#[tokio::main]
async fn main() {
    // The raw client below is the bench's own: it uses the process-wide rustls provider,
    // which only a host installs (the connector picks ring for its client alone).
    let _ = rustls::crypto::ring::default_provider().install_default();
    load_and_index().await;
    call_overhead().await;
}
