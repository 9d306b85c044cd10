//! `codemode openapi SPEC`: the official MCP TypeScript SDK client calls `search` and `execute`
//! over stdio, against a spec and an API served by the test itself.
//! Skipped (with a message) when node or the fixtures are not installed.

mod common;

use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use common::BIN;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let sdk = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    let node = Command::new("node").arg("--version").output().is_ok();
    if sdk.exists() && node {
        Some(dir)
    } else {
        eprintln!("skipped: node or fixtures/node_modules missing (run npm ci in fixtures/)");
        None
    }
}

fn spec() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": { "title": "Items", "version": "1" },
        "paths": {
            "/items": {
                "get": {
                    "operationId": "listItems",
                    "summary": "List the items",
                    "responses": { "200": { "$ref": "#/components/responses/Items" } }
                }
            },
            "/big": { "get": { "operationId": "big", "summary": "A long text", "responses": { "200": { "description": "text" } } } }
        },
        "components": {
            "responses": {
                "Items": { "description": "the items", "content": { "application/json": { "schema": {
                    "type": "array", "items": { "$ref": "#/components/schemas/Item" } } } } }
            },
            "schemas": { "Item": { "type": "object", "properties": { "name": { "type": "string" } } } }
        }
    })
}

async fn api() -> String {
    let app = Router::new()
        .route("/openapi.json", get(|| async { Json(spec()) }))
        .route(
            "/items",
            get(|headers: HeaderMap| async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                if auth == "Bearer api-s3cret" {
                    Ok(Json(json!([{ "name": "pen" }, { "name": "cup" }])))
                } else {
                    Err((axum::http::StatusCode::UNAUTHORIZED, "no token"))
                }
            }),
        )
        .route("/big", get(|| async { "word ".repeat(20_000) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_and_execute_over_stdio() {
    let Some(fx) = fixtures() else { return };
    let base = api().await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("c.db").display());
    let spec_url = format!("{base}/openapi.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_client.mjs");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .env("PASS_ENV", "1")
            .env("CM_API_TOKEN", "api-s3cret")
            .arg(script)
            .arg(fx)
            .arg("stdio")
            .args([
                BIN,
                "openapi",
                &spec_url,
                "--base-url",
                &base,
                "--bearer-env",
                "CM_API_TOKEN",
                "--max-tokens",
                "100",
                "--store",
                &store,
            ])
            .arg("--")
            .args([
                // $refs are resolved in the document the code sees.
                "@search const s = await api.spec(); return s.paths['/items'].get.responses['200'].content['application/json'].schema.items.properties.name.type;",
                "@search const s = await api.spec(); return Object.keys(s.paths);",
                // The request is authenticated host-side; the code never sees the token.
                "@execute const r = await api.request({ method: 'GET', path: '/items' }); return r.map(i => i.name).join(',');",
                "@execute return await api.request({ method: 'GET', path: '/big' });",
                "@execute return typeof process === 'undefined' && JSON.stringify(await api.spec()).includes('api-s3cret');",
                "@search return typeof api.request;",
            ])
            .output()
            .expect("run node")
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "execute"]);
    let search_desc = v["tools"][0]["description"].as_str().unwrap();
    assert!(search_desc.contains("api.spec()"), "{search_desc}");
    let exec_desc = v["tools"][1]["description"].as_str().unwrap();
    assert!(exec_desc.contains("api.request("), "{exec_desc}");

    let text = |i: usize| -> String {
        v["calls"][i]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(text(0), "string", "{}", v["calls"][0]);
    assert!(
        text(1).contains("/items") && text(1).contains("/big"),
        "{}",
        text(1)
    );
    assert_eq!(text(2), "pen,cup", "{}", v["calls"][2]);
    // 100 tokens: about 400 characters, then a marker.
    let big = text(3);
    assert!(big.len() < 1_000, "{}", big.len());
    assert!(big.contains("truncated") || big.contains("cut"), "{big}");
    assert_eq!(text(4), "false", "{}", v["calls"][4]);
    // `search` has no request function.
    assert_eq!(text(5), "undefined", "{}", v["calls"][5]);
    eprintln!(
        "truncated output ends: {}",
        &big[big.len().saturating_sub(120)..]
    );
}
