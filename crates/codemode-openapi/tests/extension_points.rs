//! The host's extension points on loopback: a `RequestSender` used for every call, raw
//! bodies with a content type in `request`, and per-method settings from configuration.

mod support;

use async_trait::async_trait;
use codemode::{CallContext, Connector, Outcome, ReplayPolicy, Runtime};
use codemode_openapi::{
    IncomingResponse, OpenApiConfig, OpenApiConnector, OutgoingRequest, RequestSender, SendError,
};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn ctx(seq: u64) -> CallContext {
    CallContext {
        execution_id: "exec-1".into(),
        seq,
    }
}

/// Signs every request (`X-Signature: <method> <url>`) and sends it with its own client.
struct Signer {
    client: reqwest::Client,
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl RequestSender for Signer {
    async fn send(&self, request: OutgoingRequest) -> Result<IncomingResponse, SendError> {
        let signature = format!("{} {}", request.method, request.url);
        self.seen.lock().unwrap().push(signature.clone());
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|e| SendError(e.to_string()))?;
        let mut builder = self.client.request(method, &request.url);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        builder = builder.header("x-signature", signature);
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let resp = builder.send().await.map_err(|e| SendError(e.to_string()))?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let body = resp.bytes().await.map_err(|e| SendError(e.to_string()))?;
        Ok(IncomingResponse {
            status,
            headers,
            body: body.to_vec(),
        })
    }
}

/// Refuses every request.
struct Refuser;

#[async_trait]
impl RequestSender for Refuser {
    async fn send(&self, _: OutgoingRequest) -> Result<IncomingResponse, SendError> {
        Err(SendError("the OAuth token could not be refreshed".into()))
    }
}

fn items(base: &str, edit: impl FnOnce(&mut OpenApiConfig)) -> (OpenApiConfig, String) {
    let mut config = OpenApiConfig::new("items", "inline");
    config.settings.approval.allow = vec!["*".into()];
    edit(&mut config);
    (config, support::spec_for(base).to_string())
}

#[tokio::test]
async fn the_hosts_sender_sends_every_call() {
    let server = support::start().await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let signer = Arc::new(Signer {
        client: reqwest::Client::new(),
        seen: Mutex::new(Vec::new()),
    });
    let (config, spec) = items(&server.base, |c| {
        c.headers.insert("X-Team".into(), "a".into());
    });
    let c = OpenApiConnector::builder(config)
        .sender(signer.clone())
        .build(spec.as_bytes())
        .unwrap();
    let echo = c.execute("echo", json!({"q": "x"}), ctx(0)).await.unwrap();
    assert_eq!(
        echo["headers"]["x-signature"],
        format!("GET {}/echo?q=x", server.base)
    );
    assert_eq!(
        echo["headers"]["x-team"], "a",
        "fixed headers reach the sender"
    );
    let created = c
        .execute("createItem", json!({"body": {"name": "pen"}}), ctx(1))
        .await
        .unwrap();
    assert_eq!(created["name"], "pen");
    let missing = c.execute("getItem", json!({"id": 99}), ctx(2)).await;
    assert!(missing.unwrap_err().0.contains("HTTP 404"));
    let seen = signer.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            format!("GET {}/echo?q=x", server.base),
            format!("POST {}/items", server.base),
            format!("GET {}/items/99", server.base),
        ]
    );

    let (config, spec) = items(&server.base, |_| {});
    let refused = OpenApiConnector::builder(config)
        .sender(Arc::new(Refuser))
        .build(spec.as_bytes())
        .unwrap();
    let err = refused.execute("listItems", json!({}), ctx(0)).await;
    assert_eq!(
        err.unwrap_err().0,
        "GET /items: the OAuth token could not be refreshed"
    );
}

#[tokio::test]
async fn raw_bodies_reach_the_server_as_sent() {
    let server = support::start().await;
    let (config, spec) = items(&server.base, |_| {});
    let c = OpenApiConnector::from_bytes(config, spec.as_bytes()).unwrap();
    let csv = "a,b\n1,\"two\"\n";
    let got = c
        .execute(
            "request",
            json!({"method": "POST", "path": "/raw", "body": csv, "contentType": "text/csv"}),
            ctx(0),
        )
        .await
        .unwrap();
    assert_eq!(got["contentType"], "text/csv");
    assert_eq!(got["text"], csv);
    let json_string = c
        .execute(
            "request",
            json!({"method": "POST", "path": "/raw", "body": "hi"}),
            ctx(1),
        )
        .await
        .unwrap();
    assert_eq!(json_string["contentType"], "application/json");
    assert_eq!(json_string["text"], "\"hi\"");
    let twice = c
        .execute(
            "request",
            json!({"method": "POST", "path": "/raw", "body": "x", "contentType": "text/plain",
                   "headers": {"Content-Type": "text/csv"}}),
            ctx(2),
        )
        .await;
    assert!(twice.unwrap_err().0.contains("given twice"));
}

#[tokio::test]
async fn a_uint8array_body_is_sent_as_its_bytes() {
    let server = support::start().await;
    let (config, spec) = items(&server.base, |_| {});
    let c = OpenApiConnector::from_bytes(config, spec.as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let runtime = Runtime::builder(Arc::new(store), Arc::new(executor))
        .connector(c)
        .build()
        .unwrap();
    let code = r#"async () => {
        const octets = await items.request({method: "POST", path: "/raw",
            body: new Uint8Array([0, 159, 255])});
        const png = await items.request({method: "POST", path: "/raw",
            body: new Uint8Array([137, 80]), contentType: "image/png"});
        return [octets, png];
    }"#;
    match runtime.call(code).await.unwrap() {
        Outcome::Completed { result, .. } => {
            assert_eq!(result[0]["contentType"], "application/octet-stream");
            assert_eq!(result[0]["bytes"], json!([0, 159, 255]));
            assert_eq!(result[1]["contentType"], "image/png");
            assert_eq!(result[1]["bytes"], json!([137, 80]));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn per_method_settings_from_configuration() {
    let server = support::start().await;
    let table = json!({
        "name": "items", "spec": "inline",
        "description": "A tiny item store, for the openapi mode's tools.",
        "tools": {
            "getItem": {"replay": "reexecute"},
            "createItem": {"requires_approval": false, "description": "Make one."},
            "get_text": {"description": "Plain text."},
            "nope": {"description": "x"}
        }
    });
    let config: OpenApiConfig = serde_json::from_value(table).unwrap();
    assert_eq!(
        config.description.as_deref(),
        Some("A tiny item store, for the openapi mode's tools.")
    );
    let spec = support::spec_for(&server.base).to_string();
    let c = OpenApiConnector::from_bytes(config, spec.as_bytes()).unwrap();
    let tools = c.tools();
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    assert_eq!(by("getItem").replay, ReplayPolicy::Reexecute);
    assert!(!by("createItem").requires_approval);
    assert_eq!(by("createItem").description.as_deref(), Some("Make one."));
    assert_eq!(by("get_text").description.as_deref(), Some("Plain text."));
    assert!(by("deleteItem").requires_approval);
    let shared: Arc<dyn Connector> = Arc::new(c);
    assert_eq!(
        shared.warnings(),
        ["OpenAPI connector `items`: tools.nope is not used: no tool has that method or original name"]
    );

    let bad: OpenApiConfig = serde_json::from_value(json!({
        "name": "items", "spec": "inline", "tools": {"deleteItem": {"replay": "reexecute"}}
    }))
    .unwrap();
    let err = OpenApiConnector::from_bytes(bad, spec.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("OpenAPI connector `items`: tools.deleteItem: replay = \"reexecute\" cannot be combined"),
        "{err}"
    );
    let typo = serde_json::from_value::<OpenApiConfig>(json!({
        "name": "items", "spec": "inline", "tools": {"getItem": {"replay": "never"}}
    }));
    assert!(typo.unwrap_err().to_string().contains("never"));
}
