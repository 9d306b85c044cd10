//! What the in-process tests share: a runtime with a small connector, and one request sent
//! through the router as a host's listener would hand it over.

#![allow(dead_code)]

use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use codemode::{Runtime, RustConnector, RustTool};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tower::ServiceExt;

/// A `notes` connector: `list` reads (no approval), `add` writes (needs approval).
fn notes() -> RustConnector {
    RustConnector::new("notes")
        .tool(
            RustTool::new("list", |_args, _ctx| async {
                Ok(json!(["buy milk", "call home"]))
            })
            .description("Lists the notes.")
            .read_only(),
        )
        .tool(
            RustTool::new("add", |args: Value, _ctx| async move {
                Ok(json!({ "added": args["text"] }))
            })
            .description("Adds a note.")
            .input_schema(json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            })),
        )
}

/// A runtime on a SQLite file in `dir` with the `notes` connector.
pub fn runtime(dir: &std::path::Path) -> Arc<Runtime> {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let rt = Runtime::builder(store, executor)
        .connector(notes())
        .build()
        .unwrap();
    Arc::new(rt)
}

/// An answer: its status, headers and body (JSON when it parses, else a string).
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

/// A request to send: method, path, the peer's address (`None`: the host recorded none),
/// extra headers and a JSON body.
pub struct Call<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub peer: Option<&'a str>,
    pub headers: Vec<(&'a str, String)>,
    pub body: Option<Value>,
}

impl<'a> Call<'a> {
    /// `method path` from the loopback address 127.0.0.1.
    pub fn new(method: &'a str, path: &'a str) -> Self {
        Call {
            method,
            path,
            peer: Some("127.0.0.1:50000"),
            headers: Vec::new(),
            body: None,
        }
    }

    /// From `peer` instead (`None`: no address recorded).
    pub fn from(mut self, peer: Option<&'a str>) -> Self {
        self.peer = peer;
        self
    }

    /// With the header `name: value`.
    pub fn header(mut self, name: &'a str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// With the JSON body `body`.
    pub fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Sends it through `app` in process (`Host: localhost`) and reads the whole answer.
    pub async fn send(self, app: &Router) -> Answer {
        let mut req = Request::builder()
            .method(self.method)
            .uri(self.path)
            .header("host", "localhost");
        for (name, value) in &self.headers {
            req = req.header(*name, value);
        }
        let body = match &self.body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        let mut req = req.body(body).unwrap();
        if let Some(p) = self.peer {
            let addr: SocketAddr = p.parse().unwrap();
            req.extensions_mut().insert(ConnectInfo(addr));
        }
        let res = app.clone().oneshot(req).await.unwrap();
        let (parts, body) = res.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        let text = String::from_utf8_lossy(&bytes).to_string();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        }
    }
}

/// The error text of a JSON error answer.
pub fn error_of(a: &Answer) -> String {
    a.body["error"].as_str().unwrap_or_default().to_string()
}
