//! Interrupted runs are resumed, never lost: `codemode serve` is killed (SIGKILL) inside an
//! approved write, and the run is taken over once its lease has run out, by `codemode resume`
//! and by `POST /api/executions/{id}/resume`; the write is applied once.

mod common;

use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use common::{cli, serve};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the API saw: every call's idempotency key, and the items applied, by key.
#[derive(Default)]
struct Seen {
    calls: Vec<String>,
    items: BTreeMap<String, Value>,
}

/// An API whose `POST /items` applies the item under its idempotency key (a key seen before
/// returns the same item), and never answers the first call of a key: the write hangs there.
async fn api(seen: Arc<Mutex<Seen>>) -> String {
    let app = Router::new().route(
        "/items",
        post(move |headers: HeaderMap, Json(b): Json<Value>| {
            let seen = seen.clone();
            async move {
                let key = headers["idempotency-key"].to_str().unwrap().to_string();
                let first = {
                    let mut s = seen.lock().unwrap();
                    s.calls.push(key.clone());
                    let n = s.items.len() + 1;
                    let fresh = !s.items.contains_key(&key);
                    s.items
                        .entry(key.clone())
                        .or_insert_with(|| json!({"id": n, "name": b["name"]}));
                    fresh
                };
                if first {
                    std::future::pending::<()>().await;
                }
                Json(seen.lock().unwrap().items[&key].clone())
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

/// A config with the API as connector `items` and a short lease (2 s).
fn configure(dir: &Path, base: &str) {
    std::fs::write(dir.join("items.json"), SPEC).unwrap();
    std::fs::write(
        dir.join("codemode.toml"),
        format!(
            "[limits]\ntimeout_ms = 500\nlease_ms = 2000\n\
             [connectors.items]\ntype = \"openapi\"\nspec = \"./items.json\"\n\
             base_url = \"{base}\"\nidempotency_header = \"Idempotency-Key\"\n"
        ),
    )
    .unwrap();
}

/// Runs a write, approves it, and SIGKILLs the server while the write hangs in the API; the
/// execution id.
async fn kill_inside_the_write(dir: &Path, seen: &Arc<Mutex<Seen>>, name: &str) -> String {
    let mut server = serve(dir, &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let code = format!("return await items.createItem({{ body: {{ name: '{name}' }} }})");
    let (_, paused) = common::post(
        &c,
        format!("{}/api/run", server.base),
        json!({"code": code}),
    )
    .await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["executionId"].as_str().unwrap().to_string();
    let before = seen.lock().unwrap().calls.len();
    let approve = c
        .post(format!("{}/api/executions/{id}/approve", server.base))
        .json(&json!({}))
        .send();
    let approving = tokio::spawn(approve);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().calls.len() == before {
        assert!(
            Instant::now() < deadline,
            "the approved write never reached the API"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(
        approving.await.unwrap().is_err(),
        "the killed server answered"
    );
    id
}

fn db(dir: &Path) -> std::path::PathBuf {
    dir.join("codemode.db")
}

/// The write of `name` was applied once, and its key sent twice (the cut call and the resumed one).
fn applied_once(seen: &Arc<Mutex<Seen>>, name: &str) {
    let s = seen.lock().unwrap();
    let items: Vec<&Value> = s.items.values().filter(|i| i["name"] == name).collect();
    assert_eq!(items.len(), 1, "applied {} times", items.len());
    let key = s.items.iter().find(|(_, i)| i["name"] == name).unwrap().0;
    assert_eq!(
        s.calls.iter().filter(|k| *k == key).count(),
        2,
        "{:?}",
        s.calls
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_inside_an_approved_write_is_resumed_by_the_cli_once_its_lease_expires() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = api(seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    configure(dir.path(), &base);
    let id = kill_inside_the_write(dir.path(), &seen, "cup").await;

    let early = cli(dir.path(), &db(dir.path()), &["resume", &id]);
    let stderr = String::from_utf8_lossy(&early.stderr);
    assert!(!early.status.success(), "resumed under a live lease");
    assert!(
        stderr.contains("try again after the lease (2 s)"),
        "{stderr}"
    );

    let deadline = Instant::now() + Duration::from_secs(20);
    let done: Value = loop {
        let out = cli(dir.path(), &db(dir.path()), &["--json", "resume", &id]);
        if out.status.success() {
            break serde_json::from_slice(&out.stdout).unwrap();
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("try again after the lease"), "{err}");
        assert!(Instant::now() < deadline, "never resumed: {err}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["name"], "cup", "{done}");
    applied_once(&seen, "cup");

    let again = cli(dir.path(), &db(dir.path()), &["resume", &id]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success());
    assert!(stderr.contains("is completed"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_inside_an_approved_write_is_resumed_over_the_api() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = api(seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    configure(dir.path(), &base);
    let id = kill_inside_the_write(dir.path(), &seen, "mug").await;

    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let url = format!("{}/api/executions/{id}/resume", server.base);
    let (status, early) = common::post(&c, url.clone(), json!({})).await;
    assert_eq!(status, 409, "{early}");
    assert!(
        early["error"]
            .as_str()
            .unwrap()
            .contains("try again after the lease (2 s)"),
        "{early}"
    );

    // This server also resumes its interrupted runs on its own: whichever comes first wins,
    // and the other is told the run is no longer running.
    let deadline = Instant::now() + Duration::from_secs(20);
    let by_api = loop {
        let (status, answer) = common::post(&c, url.clone(), json!({})).await;
        assert!(answer.is_object(), "{answer}");
        match status {
            200 => {
                assert_eq!(answer["status"], "completed", "{answer}");
                break true;
            }
            409 if answer["error"].as_str().unwrap().contains("is completed") => break false,
            409 => assert!(answer["error"]
                .as_str()
                .unwrap()
                .contains("try again after the lease")),
            other => panic!("{other}: {answer}"),
        }
        assert!(Instant::now() < deadline, "never resumed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (_, shown) = common::get(&c, format!("{}/api/executions/{id}", server.base)).await;
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["result"]["name"], "mug", "{shown}");
    applied_once(&seen, "mug");
    // (What `serve` prints before its address is not captured, so only the resume line,
    // printed once the lease is gone, is looked for.)
    let log = server.stderr.lock().unwrap().clone();
    if !by_api {
        assert!(
            log.contains(&format!("resumed interrupted execution {id}")),
            "{log}"
        );
    }
}
