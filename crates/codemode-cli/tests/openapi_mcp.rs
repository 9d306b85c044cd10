//! `codemode openapi SPEC`: the official MCP TypeScript SDK client calls `search` and `execute`
//! over stdio, against a spec and an API served by the test itself.
//! Skipped (with a message) when node or the fixtures are not installed.

mod common;

use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use common::BIN;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

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
    let Some(fx) = common::fixtures() else { return };
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
                "@search try { await api.request({ method: 'GET', path: '/items' }); return 'requested'; } catch (e) { return e.message; }",
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
    // `search` has no request function: calling one says so (every name reads as a function).
    assert!(
        text(5).contains("api.request is not a method of connector api"),
        "{}",
        v["calls"][5]
    );
    eprintln!(
        "truncated output ends: {}",
        &big[big.len().saturating_sub(120)..]
    );
}

/// GitHub's description (13 MB, 1,223 operations) with default limits (64 MiB sandbox): a
/// search over all paths answers from the host in under 500 ms, an operation comes back with
/// its refs resolved, the whole document is refused with directions, and execute calls a
/// loopback server standing in for api.github.com.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_scale_search_and_execute_with_default_limits() {
    let Some(fx) = common::fixtures() else { return };
    let github = fx.join("node_modules/@octokit/openapi/generated/api.github.com.json");
    if !github.exists() {
        codemode_testkit::missing(&github.display().to_string(), "run `npm ci` in fixtures/");
        return;
    }
    let app = Router::new().route(
        "/repos/{owner}/{repo}",
        get(
            |axum::extract::Path((owner, repo)): axum::extract::Path<(String, String)>| async move {
                Json(json!({ "full_name": format!("{owner}/{repo}"), "stargazers_count": 42 }))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("c.db").display());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_client.mjs");
    let started = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(script)
            .arg(fx)
            .arg("stdio")
            .args([BIN, "openapi"])
            .arg(&github)
            .args(["--base-url", &base, "--store", &store, "--"])
            .args([
                "@search const t = Date.now(); const ops = await api.paths(); \
                 return { n: ops.length, ms: Date.now() - t, first: ops[0] };",
                "@search const ops = await api.paths('star repo'); \
                 const op = await api.operation('GET /repos/{owner}/{repo}'); \
                 return { hits: ops.length, params: op.parameters.map(p => p.name), \
                 fullName: op.responses['200'].content['application/json'].schema.properties.full_name.type, \
                 tagged: (await api.paths({ tag: 'gists', method: 'DELETE' })).length };",
                "@search try { await api.spec(); return 'whole'; } catch (e) { return String(e.message); }",
                "@search const s = await api.get('#/components/schemas/simple-user'); return s.properties.login.type;",
                "@execute const r = await api.request({ method: 'GET', path: '/repos/octo/hello' }); \
                 return r.full_name + ':' + r.stargazers_count;",
            ])
            .output()
            .expect("run node")
    })
    .await
    .unwrap();
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = |i: usize| -> String {
        let c = &v["calls"][i];
        assert_ne!(c["isError"], true, "call {i}: {c}");
        c["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let all: Value = serde_json::from_str(&text(0)).unwrap();
    assert_eq!(all["n"], 1_223, "{all}");
    assert!(all["first"]["path"].is_string(), "{all}");
    let ms = all["ms"].as_u64().unwrap();
    assert!(ms < 500, "a query over all paths took {ms} ms");
    let one: Value = serde_json::from_str(&text(1)).unwrap();
    assert!(one["hits"].as_u64().unwrap() > 0, "{one}");
    assert_eq!(one["params"], json!(["owner", "repo"]), "{one}");
    assert_eq!(one["fullName"], "string", "{one}");
    assert_eq!(one["tagged"], 3, "{one}");
    let whole = text(2);
    assert!(
        whole.contains("too large") && whole.contains("api.paths"),
        "{whole}"
    );
    assert_eq!(text(3), "string");
    assert_eq!(text(4), "octo/hello:42");
    let desc = v["tools"][0]["description"].as_str().unwrap();
    assert!(
        desc.contains("api.paths(") && desc.contains("1223"),
        "{desc}"
    );
    eprintln!("paths() over all operations: {ms} ms in the sandbox; whole session {elapsed:?}");
}
