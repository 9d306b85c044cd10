//! Chaos: `codemode serve` is killed (SIGKILL) at seeded random moments while clients run
//! writes and approve them, then started again on the same store, cycle after cycle, on a
//! SQLite file and on PostgreSQL. Afterwards no execution is left running (the restarted
//! server took each interrupted one over once its lease ran out), every item the API made is
//! recorded as applied by exactly one run, none was made twice, and what each completed run
//! returned is what the API holds.
//! `CODEMODE_CHAOS_CYCLES` sets the cycles per store (default 5).

mod common;

use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use codemode_postgres::ScratchDatabase;
use common::serve_on;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn cycles() -> u64 {
    std::env::var("CODEMODE_CHAOS_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// Items applied by idempotency key; every call's key in order.
#[derive(Default)]
struct Api {
    items: BTreeMap<String, Value>,
    calls: Vec<String>,
}

/// An API whose `POST /items` applies an item once per idempotency key (a repeated key
/// answers the item already made).
async fn api(state: Arc<Mutex<Api>>) -> String {
    let app = Router::new().route(
        "/items",
        post(move |headers: HeaderMap, Json(b): Json<Value>| {
            let state = state.clone();
            async move {
                let key = headers["idempotency-key"].to_str().unwrap().to_string();
                let mut s = state.lock().unwrap();
                s.calls.push(key.clone());
                let n = s.items.len() + 1;
                let item = s
                    .items
                    .entry(key)
                    .or_insert_with(|| json!({"id": n, "name": b["name"]}))
                    .clone();
                Json(item)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

const SPEC: &str = r#"{
  "openapi": "3.0.3",
  "info": { "title": "Items", "version": "1" },
  "paths": { "/items": { "post": {
    "operationId": "createItem",
    "requestBody": { "content": { "application/json": { "schema": {
      "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } } } },
    "responses": { "200": { "description": "ok" } } } } }
}"#;

/// The connector `items` on the API, a short lease so a restarted server takes interrupted
/// runs over soon, and every execution kept, so each can be checked.
fn configure(dir: &Path, base: &str) {
    std::fs::write(dir.join("items.json"), SPEC).unwrap();
    std::fs::write(
        dir.join("codemode.toml"),
        format!(
            "max_executions = 100000\n[limits]\ntimeout_ms = 300\nlease_ms = 600\n\
             [connectors.items]\ntype = \"openapi\"\nspec = \"./items.json\"\n\
             base_url = \"{base}\"\nidempotency_header = \"Idempotency-Key\"\n"
        ),
    )
    .unwrap();
}

/// A small deterministic generator (the seed is printed, so a failure can be replayed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Runs `runs` writes and approves them, or fewer if the server dies first.
async fn workload(base: String, cycle: u64, runs: u64) {
    let c = common::client();
    for i in 0..runs {
        let name = format!("c{cycle}-{i}");
        let code = format!("return await items.createItem({{ body: {{ name: '{name}' }} }})");
        let Ok(r) = c
            .post(format!("{base}/api/run"))
            .json(&json!({ "code": code }))
            .send()
            .await
        else {
            return;
        };
        let Ok(paused) = r.json::<Value>().await else {
            return;
        };
        let Some(id) = paused["executionId"].as_str() else {
            return;
        };
        let approved = c
            .post(format!("{base}/api/executions/{id}/approve"))
            .json(&json!({}))
            .send()
            .await;
        if approved.is_err() {
            return;
        }
    }
}

/// Every execution with its log, once none is running any more (a restarted server resumes
/// its own). The listing carries no logs: each is read by id.
async fn settled(base: &str) -> Vec<Value> {
    let c = common::client();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, list) = common::get(&c, format!("{base}/api/executions?limit=500")).await;
        let all = list.as_array().cloned().unwrap_or_default();
        if all.iter().all(|e| e["status"] != "running") {
            let mut full = Vec::with_capacity(all.len());
            for e in &all {
                let id = e["id"].as_str().unwrap();
                full.push(
                    common::get(&c, format!("{base}/api/executions/{id}"))
                        .await
                        .1,
                );
            }
            return full;
        }
        assert!(Instant::now() < deadline, "runs left running: {list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn chaos(dir: &Path, store: &str, seed: u64) {
    let state = Arc::new(Mutex::new(Api::default()));
    let base = api(state.clone()).await;
    configure(dir, &base);
    let mut rng = Lcg(seed);
    for cycle in 0..cycles() {
        let mut server = serve_on(dir, store, &["--listen", "127.0.0.1:0"], &[]);
        settled(&server.base).await;
        let work = tokio::spawn(workload(server.base.clone(), cycle, u64::MAX));
        tokio::time::sleep(Duration::from_millis(20 + rng.below(300))).await;
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        let _ = work.await;
    }
    let server = serve_on(dir, store, &["--listen", "127.0.0.1:0"], &[]);
    // A few runs undisturbed on the last server, so something completes however slow the
    // machine made the cycles.
    settled(&server.base).await;
    workload(server.base.clone(), cycles(), 3).await;
    let runs = settled(&server.base).await;
    let s = state.lock().unwrap();
    // One item per name: no write was made twice under two keys.
    let mut names: Vec<&str> = s
        .items
        .values()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let made = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), made, "seed {seed}: an item was made twice");
    let mut completed = 0;
    let mut ran = 0;
    for e in &runs {
        if e["log"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x["state"] == "applied"))
        {
            ran += 1;
        }
        match e["status"].as_str().unwrap() {
            "completed" => {
                completed += 1;
                let name = &e["result"]["name"];
                let held = s.items.values().find(|i| &i["name"] == name);
                assert_eq!(held, Some(&e["result"]), "seed {seed}: {e}");
            }
            "paused" | "error" | "rejected" => {}
            other => panic!("seed {seed}: a run ended {other}: {e}"),
        }
    }
    eprintln!(
        "chaos (seed {seed}): {} cycles, {} runs, {completed} completed, {} items, {} calls",
        cycles(),
        runs.len(),
        made,
        s.calls.len()
    );
    assert!(completed > 0, "seed {seed}: nothing completed");
    // Every item made belongs to exactly one run whose log holds it applied: no applied write
    // was lost (an interrupted one was taken over, asked again by its key, and recorded). A
    // run that applied its write may still end in error (on a busy machine its pass can pass
    // the 300 ms time limit after the write returned), so it is counted by its log.
    let unfinished: Vec<String> = runs
        .iter()
        .filter(|e| e["status"] != "completed")
        .map(|e| {
            format!(
                "{} {} error={} log={}",
                e["id"], e["status"], e["error"], e["log"]
            )
        })
        .collect();
    assert_eq!(
        made,
        ran,
        "seed {seed}: {made} items, {ran} runs with an applied write ({completed} completed); the others:\n{}",
        unfinished.join("\n")
    );
    assert!(ran >= completed, "seed {seed}");
}

fn seed() -> u64 {
    std::env::var("CODEMODE_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_on_sqlite_nothing_is_lost_or_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("codemode.db").display());
    chaos(dir.path(), &store, seed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_on_postgres_nothing_is_lost_or_doubled() {
    let Some(db) = ScratchDatabase::for_tests("chaos_kill_serve")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    chaos(dir.path(), db.url(), seed() + 1).await;
}
