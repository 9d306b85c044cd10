//! Requests stay below the base URL by whole path segments: `..`, `%2e%2e`, encoded slashes,
//! `//host` and URLs are refused before anything is sent, while a path parameter holding a `/`
//! is percent-encoded into its one segment and works.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Router;
use codemode::{CallContext, Connector};
use codemode_openapi::{OpenApiConfig, OpenApiConnector};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn ctx(seq: u64) -> CallContext {
    CallContext {
        execution_id: "exec-1".into(),
        seq,
    }
}

/// A server with the API under `/v1` and something private beside it at `/v1-admin`.
async fn start() -> (String, Arc<AtomicUsize>) {
    let admin_hits = Arc::new(AtomicUsize::new(0));
    async fn file(Path(name): Path<String>) -> String {
        format!("file {name}")
    }
    async fn admin(State(hits): State<Arc<AtomicUsize>>) -> &'static str {
        hits.fetch_add(1, Ordering::SeqCst);
        "admin secrets"
    }
    let app = Router::new()
        .route("/v1/files/{name}", get(file))
        .route("/v1-admin/secret", get(admin))
        .route("/admin/secret", get(admin))
        .with_state(admin_hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), admin_hits)
}

fn connector(base: &str) -> OpenApiConnector {
    let doc = json!({
        "openapi": "3.1.0",
        "info": {"title": "Files", "version": "1"},
        "servers": [{"url": format!("{base}/v1")}],
        "paths": {
            "/files/{name}": {"get": {"operationId": "getFile",
                "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}}}},
            "/../v1-admin/secret": {"get": {"operationId": "sneaky",
                "responses": {"200": {"description": "ok"}}}}
        }
    });
    OpenApiConnector::from_bytes(
        OpenApiConfig::new("files", "inline"),
        doc.to_string().as_bytes(),
    )
    .unwrap()
}

#[tokio::test]
async fn path_parameters_fill_one_segment() {
    let (base, admin_hits) = start().await;
    let c = connector(&base);
    let ok = c
        .execute("getFile", json!({"name": "reports/2024 q1.txt"}), ctx(0))
        .await
        .unwrap();
    assert_eq!(
        ok,
        json!("file reports/2024 q1.txt"),
        "a slash is encoded into the segment"
    );
    for (bad, why) in [
        ("..", "cannot be `.` or `..`"),
        (".", "cannot be `.` or `..`"),
        ("%2e%2e", "cannot be `.` or `..`"),
        ("%2E.", "cannot be `.` or `..`"),
        ("http://evil.example/x", "cannot be a URL"),
        ("//evil.example/x", "cannot be a URL"),
    ] {
        let err = c
            .execute("getFile", json!({"name": bad}), ctx(1))
            .await
            .unwrap_err();
        assert!(
            err.0.starts_with("path parameter `name` is") && err.0.contains(why),
            "{bad}: {err}"
        );
    }
    assert_eq!(admin_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn raw_paths_stay_below_the_base_url() {
    let (base, admin_hits) = start().await;
    let c = connector(&base);
    let ok = c
        .execute("request", json!({"path": "/files/notes.txt"}), ctx(0))
        .await
        .unwrap();
    assert_eq!(ok, json!("file notes.txt"));
    for (bad, why) in [
        ("/../v1-admin/secret", "`.` or `..` segment"),
        ("/files/../../v1-admin/secret", "`.` or `..` segment"),
        ("/%2e%2e/v1-admin/secret", "`.` or `..` segment"),
        ("/%2E%2E/admin/secret", "`.` or `..` segment"),
        ("/files/a%2F..%2F..%2Fadmin", "encoded `/`"),
        ("/files/a%5Cb", "encoded `/`"),
        ("//evil.example/x", "single `/`"),
        ("http://evil.example/x", "not a URL"),
        ("files/x", "single `/`"),
        ("/files//x", "empty segment"),
        ("/files/x?admin=1", "`?`"),
        ("/files\\..\\..\\admin", "`\\`"),
    ] {
        let err = c
            .execute("request", json!({"path": bad}), ctx(1))
            .await
            .unwrap_err();
        assert!(
            err.0.starts_with(&format!("`path` {:?}", bad)) && err.0.contains(why),
            "{bad}: {err}"
        );
        assert!(err.0.contains("below the API's base URL"), "{err}");
    }
    assert_eq!(admin_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_prefix_of_the_base_path_is_not_below_it() {
    // The document's own path resolves to /v1-admin/secret: it starts with "/v1" as a string,
    // but not by segments, so nothing is sent.
    let (base, admin_hits) = start().await;
    let c = connector(&base);
    let err = c.execute("sneaky", json!({}), ctx(0)).await.unwrap_err();
    assert!(err.0.contains("leaves the API's base URL /v1"), "{err}");
    assert_eq!(admin_hits.load(Ordering::SeqCst), 0);
    let _: Value = c
        .execute("getFile", json!({"name": "still-fine"}), ctx(1))
        .await
        .unwrap();
}
