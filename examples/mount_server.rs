//! A host mounts `codemode-server` in its own axum app, behind its own auth.
//!
//! The host already knows its users: each has an API key, sent as `X-Api-Key`. Its middleware
//! checks the key, refuses requests without a known one, and tells the server who calls by
//! putting a `Principal` (a name and a role) in the request's extensions. Because the host
//! authenticates every request itself, it mounts the router with
//! `ServerOptions::host_authenticated()`; without that opt-in (and without bearer tokens) the
//! router would serve only clients on loopback. The app is served on a real loopback port,
//! with each request's peer address (`into_make_service_with_connect_info`), and the example
//! makes real HTTP requests: a run, `whoami`, a refused prune and a refused stranger.
//!
//! Run it with `cargo run -p codemode-examples --example mount_server`.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use codemode::{Runtime, RustConnector, RustTool};
use codemode_quickjs::QuickJsExecutor;
use codemode_server::auth::{Principal, Role};
use codemode_server::ServerOptions;
use codemode_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;

/// The host's users by API key: who each is and what they may do.
type Keys = Arc<HashMap<&'static str, Principal>>;

/// An `inventory` connector with one read-only method.
fn inventory() -> RustConnector {
    RustConnector::new("inventory").tool(
        RustTool::new("count", |_args, _ctx| async {
            Ok(json!({ "apples": 12, "pears": 7 }))
        })
        .description("Counts the items in stock.")
        .read_only(),
    )
}

/// The host's own auth: a known `X-Api-Key` becomes that user's `Principal`; anything else is
/// refused here, before the codemode routes see it. `/healthz` stays open for probes.
async fn authenticate(State(keys): State<Keys>, mut req: Request, next: Next) -> Response {
    if req.uri().path() == "/healthz" {
        return next.run(req).await;
    }
    let key = req.headers().get("x-api-key").and_then(|v| v.to_str().ok());
    match key.and_then(|k| keys.get(k)) {
        Some(user) => {
            req.extensions_mut().insert(user.clone());
            next.run(req).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            Json(json!({ "error": "send a valid X-Api-Key header" })),
        )
            .into_response(),
    }
}

/// What the host's requests were answered: (status, body) each.
#[derive(Debug)]
struct Answers {
    stranger: (u16, Value),
    run: (u16, Value),
    whoami: (u16, Value),
    prune: (u16, Value),
    health: (u16, Value),
    version: (u16, Value),
}

/// Builds the runtime and the host's app, serves it on a free loopback port, and makes the
/// requests.
async fn run(store_path: &std::path::Path) -> Result<Answers, Box<dyn Error>> {
    let store = Arc::new(SqliteStore::open(store_path)?);
    let executor = Arc::new(QuickJsExecutor::default());
    let runtime = Runtime::builder(store, executor)
        .connector(inventory())
        .build()?;

    let keys: Keys = Arc::new(HashMap::from([
        ("key-alice", Principal::new("alice", Role::Run)),
        ("key-ops", Principal::new("ops", Role::Admin)),
    ]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let options = ServerOptions {
        // The `Host` header must name this address (a DNS-rebinding check).
        listen: Some(addr),
        ..ServerOptions::default()
    }
    .host_authenticated();
    let app = Router::new()
        .route(
            "/host/version",
            get(|| async { Json(json!("my-host 1.0")) }),
        )
        .merge(codemode_server::router(Arc::new(runtime), options))
        .layer(middleware::from_fn_with_state(keys, authenticate));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    let server = tokio::spawn(async move {
        axum::serve(listener, service)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });

    // The workspace builds reqwest on rustls without a crypto provider: one is installed
    // before the first client, even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let base = format!("http://{addr}");
    let send = |req: reqwest::RequestBuilder| async move {
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await?;
        Ok::<_, reqwest::Error>((status, body))
    };
    let code = json!({ "code": "const stock = await inventory.count({}); return stock.apples + stock.pears;" });
    let answers = Answers {
        stranger: send(http.post(format!("{base}/api/run")).json(&code)).await?,
        run: send(
            http.post(format!("{base}/api/run"))
                .header("x-api-key", "key-alice")
                .json(&code),
        )
        .await?,
        whoami: send(
            http.get(format!("{base}/api/whoami"))
                .header("x-api-key", "key-alice"),
        )
        .await?,
        prune: send(
            http.post(format!("{base}/api/prune"))
                .header("x-api-key", "key-alice")
                .json(&json!({})),
        )
        .await?,
        health: send(http.get(format!("{base}/healthz"))).await?,
        version: send(
            http.get(format!("{base}/host/version"))
                .header("x-api-key", "key-ops"),
        )
        .await?,
    };
    let _ = stop.send(());
    server.await??;
    Ok(answers)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let a = run(&dir.path().join("codemode.db")).await?;
    println!(
        "no API key, POST /api/run:  {} {}",
        a.stranger.0, a.stranger.1
    );
    println!("alice, POST /api/run:       {} {}", a.run.0, a.run.1);
    println!("alice, GET /api/whoami:     {} {}", a.whoami.0, a.whoami.1);
    println!("alice, POST /api/prune:     {} {}", a.prune.0, a.prune.1);
    println!("no API key, GET /healthz:   {} {}", a.health.0, a.health.1);
    println!(
        "ops, GET /host/version:     {} {}",
        a.version.0, a.version.1
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_host_decides_who_calls_and_the_server_keeps_the_roles() {
        let dir = tempfile::tempdir().unwrap();
        let a = run(&dir.path().join("codemode.db")).await.unwrap();

        assert_eq!(a.stranger.0, 401, "{:?}", a.stranger);
        assert_eq!(a.run.0, 200, "{:?}", a.run);
        assert_eq!(a.run.1["status"], "completed");
        assert_eq!(a.run.1["result"], 19);
        assert_eq!(a.whoami.0, 200);
        assert_eq!(a.whoami.1["name"], "alice");
        assert_eq!(a.whoami.1["role"], "run");
        assert_eq!(a.whoami.1["allows"]["admin"], false);
        // The role `run` may run code but not prune: the server's own check, 403.
        assert_eq!(a.prune.0, 403, "{:?}", a.prune);
        let refusal = a.prune.1["error"].as_str().unwrap();
        assert!(refusal.contains("\"alice\" has the role run"), "{refusal}");
        assert_eq!(a.health.0, 200);
        assert_eq!(a.health.1["connectors"], json!(["inventory"]));
        assert_eq!(a.version, (200, json!("my-host 1.0")));
    }
}
