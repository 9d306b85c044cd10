//! A small API on loopback (axum), and its OpenAPI document.
#![allow(dead_code)]

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server's state: items by id.
#[derive(Default)]
pub struct Api {
    pub items: Mutex<BTreeMap<u64, Value>>,
    pub next: Mutex<u64>,
    pub spec: Mutex<String>,
}

/// A running server.
pub struct Server {
    pub base: String,
    pub api: Arc<Api>,
}

async fn list(State(api): State<Arc<Api>>) -> Json<Value> {
    Json(Value::Array(
        api.items.lock().unwrap().values().cloned().collect(),
    ))
}

async fn create(State(api): State<Arc<Api>>, Json(body): Json<Value>) -> impl IntoResponse {
    let id = {
        let mut n = api.next.lock().unwrap();
        *n += 1;
        *n
    };
    let mut item = body;
    item["id"] = json!(id);
    api.items.lock().unwrap().insert(id, item.clone());
    (StatusCode::CREATED, Json(item))
}

async fn fetch(State(api): State<Arc<Api>>, Path(id): Path<u64>) -> impl IntoResponse {
    match api.items.lock().unwrap().get(&id) {
        Some(v) => (StatusCode::OK, Json(v.clone())),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"message": format!("no item {id}")})),
        ),
    }
}

async fn remove(State(api): State<Arc<Api>>, Path(id): Path<u64>) -> StatusCode {
    match api.items.lock().unwrap().remove(&id) {
        Some(_) => StatusCode::NO_CONTENT,
        None => StatusCode::NOT_FOUND,
    }
}

async fn echo(Query(q): Query<Vec<(String, String)>>, headers: HeaderMap) -> Json<Value> {
    let headers: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    Json(json!({"query": q, "headers": headers}))
}

async fn echo_fail(
    Query(q): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (
        StatusCode::FORBIDDEN,
        format!("denied for {auth} with {q:?}"),
    )
}

/// The request body and content type as received: `{contentType, text, bytes}`.
async fn raw(headers: HeaderMap, body: axum::body::Bytes) -> Json<Value> {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Json(json!({
        "contentType": ct,
        "text": String::from_utf8_lossy(&body),
        "bytes": body.to_vec(),
    }))
}

async fn text() -> &'static str {
    "plain hello"
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(3)).await;
    "late"
}

async fn big_error() -> impl IntoResponse {
    (StatusCode::INTERNAL_SERVER_ERROR, "E".repeat(10_000))
}

async fn spec(State(api): State<Arc<Api>>) -> impl IntoResponse {
    (
        [("content-type", "application/json")],
        api.spec.lock().unwrap().clone(),
    )
}

/// Starts the server on a free loopback port.
pub async fn start() -> Server {
    let api = Arc::new(Api::default());
    let app = Router::new()
        .route("/items", get(list).post(create))
        .route("/items/{id}", get(fetch).delete(remove))
        .route("/echo", get(echo))
        .route("/echo-fail", get(echo_fail))
        .route("/text", get(text))
        .route("/raw", axum::routing::post(raw))
        .route("/slow", get(slow))
        .route("/big-error", get(big_error))
        .route("/spec.json", get(spec))
        .with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    let base = format!("http://{addr}");
    *api.spec.lock().unwrap() = spec_for(&base).to_string();
    Server { base, api }
}

/// The OpenAPI 3.0 document of the server, `servers` pointing at `base`.
pub fn spec_for(base: &str) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Items", "version": "1", "description": "A tiny item store."},
        "servers": [{"url": base}],
        "paths": {
            "/items": {
                "get": {"operationId": "listItems", "summary": "List items",
                        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}}}}},
                "post": {"operationId": "createItem", "summary": "Create an item",
                         "requestBody": {"$ref": "#/components/requestBodies/NewItem"},
                         "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}}}}
            },
            "/items/{id}": {
                "parameters": [{"$ref": "#/components/parameters/Id"}],
                "get": {"operationId": "getItem", "responses": {"200": {"description": "ok"}}},
                "delete": {"operationId": "deleteItem", "responses": {"204": {"description": "gone"}}}
            },
            "/echo": {"get": {"operationId": "echo",
                "parameters": [
                    {"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "ok"}}}},
            "/echo-fail": {"get": {"operationId": "echoFail", "responses": {"200": {"description": "ok"}}}},
            "/text": {"get": {"responses": {"200": {"description": "ok"}}}},
            "/slow": {"get": {"operationId": "slow", "responses": {"200": {"description": "ok"}}}},
            "/big-error": {"get": {"operationId": "bigError", "responses": {"200": {"description": "ok"}}}}
        },
        "components": {
            "parameters": {"Id": {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}},
            "requestBodies": {"NewItem": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewItem"}}}}},
            "schemas": {
                "NewItem": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "note": {"type": "string", "nullable": true}}},
                "Item": {"allOf": [{"$ref": "#/components/schemas/NewItem"},
                                   {"type": "object", "properties": {"id": {"type": "integer"}}}]}
            }
        }
    })
}

/// The fixtures' `node_modules`, or `None` (after saying so) when they are not installed.
pub fn fixtures() -> Option<std::path::PathBuf> {
    let dir = codemode_testkit::npm_fixtures()?;
    let octokit = dir.join("@octokit/openapi").is_dir().then_some(dir);
    codemode_testkit::require(
        octokit,
        "fixtures/node_modules/@octokit/openapi",
        "run `npm ci` in fixtures/",
    )
}
