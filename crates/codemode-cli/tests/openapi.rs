//! An OpenAPI connector from `codemode.toml`, against an API served by the test itself.

mod common;

use axum::routing::get;
use axum::{Json, Router};
use common::{cli, serve};
use serde_json::{json, Value};

async fn api() -> String {
    let app = Router::new().route(
        "/items",
        get(|| async { Json(json!([{ "id": 1, "name": "pen" }])) }).post(
            |Json(b): Json<Value>| async move { Json(json!({ "id": 2, "name": b["name"] })) },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

const SPEC: &str = r#"{
  "openapi": "3.0.3",
  "info": { "title": "Items", "version": "1" },
  "paths": {
    "/items": {
      "get": { "operationId": "listItems", "responses": { "200": { "description": "ok" } } },
      "post": {
        "operationId": "createItem",
        "requestBody": { "content": { "application/json": { "schema": {
          "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } } } },
        "responses": { "200": { "description": "ok" } }
      }
    }
  }
}"#;

// Multi-threaded: the CLI child below is awaited synchronously while the API keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_connector_reads_freely_and_writes_after_approval() {
    let base = api().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("items.json"), SPEC).unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        format!("[connectors.items]\ntype = \"openapi\"\nspec = \"./items.json\"\nbase_url = \"{base}\"\n"),
    )
    .unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();
    let (_, health) = common::get(&c, format!("{}/healthz", server.base)).await;
    assert_eq!(health["connectors"], json!(["items", "state"]), "{health}");

    let run = |code: &'static str| {
        let c = c.clone();
        let url = format!("{}/api/run", server.base);
        async move {
            c.post(url)
                .json(&json!({ "code": code }))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let listed = run("return await items.listItems({})").await;
    assert_eq!(listed["status"], "completed", "{listed}");
    assert_eq!(listed["result"][0]["name"], "pen", "{listed}");

    let paused = run("return await items.createItem({ body: { name: 'cup' } })").await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["executionId"].as_str().unwrap();
    let out = cli(dir.path(), &server.db, &["--json", "approve", id]);
    let done: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["name"], "cup", "{done}");
}
