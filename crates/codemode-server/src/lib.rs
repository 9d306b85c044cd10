//! The fronts of a Code Mode runtime, as a library a Rust host mounts in its own axum app:
//! the HTTP control API (`/api`), the MCP server (`/mcp` over Streamable HTTP, or stdio) with
//! elicitation, the web console (`/`), and the OpenAPI search/execute server.
//!
//! Safe by default: with no bearer token configured, only clients on loopback are served, told
//! apart by the peer address the host's listener records, so serve the router with
//! `into_make_service_with_connect_info::<SocketAddr>()` (or [`listen::serve`]). Configure
//! [`ServerOptions::tokens`] to serve other clients, or opt in with
//! [`ServerOptions::host_authenticated`] when the host authenticates requests itself. The
//! crate's README describes the routes and who may call them.
//!
//! ```no_run
//! # async fn host(runtime: codemode::Runtime) {
//! use std::net::SocketAddr;
//! use std::sync::Arc;
//! let app = codemode_server::router(Arc::new(runtime), codemode_server::ServerOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7357").await.unwrap();
//! let service = app.into_make_service_with_connect_info::<SocketAddr>();
//! axum::serve(listener, service).await.unwrap();
//! # }
//! ```
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod admission;
pub mod api;
pub mod audit;
pub mod auth;
pub mod client;
pub mod config;
pub mod console;
pub mod control;
mod decisions;
mod error;
pub mod events;
mod front;
mod guard;
pub mod listen;
pub mod mcp;
pub mod metrics;
pub mod openapi_mcp;
pub mod recover;
mod reply;
pub mod saved;
mod start;
mod state;
pub mod telemetry;
pub mod wait;
pub mod when;

pub use auth::Access;
pub use client::Client;
pub use control::{Control, ControlError, ControlResult};
pub use error::ServerError;
pub use start::{start_connectors, StartError, StartedConnectors};
pub use state::{ServerOptions, ServerState, SharedState, DEFAULT_MAX_BODY_BYTES};
pub use wait::DEFAULT_WAIT;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{middleware, Router};
use codemode::Runtime;
use std::sync::Arc;

/// Every route: `/healthz`, the console at `/`, and, behind the token, `/api` and `/mcp`. With
/// no token in `options`, only loopback clients are served (see [`Access`]).
pub fn router(runtime: Arc<Runtime>, options: ServerOptions) -> Router {
    routes(ServerState::new(runtime, options))
}

/// [`router`] over state a host already built. This and [`router`] are the only ways to get
/// the HTTP routes: the API, `/mcp`, the console and the metrics are served behind the token
/// check and the loopback rule, never without them.
pub fn routes(state: SharedState) -> Router {
    let max_body = state.options.max_body_bytes;
    let metrics = metrics::Metrics::start(&state.runtime);
    metrics.count_event_streams(state.events.clone());
    let guarded = api::routes(max_body)
        .route("/api/whoami", get(auth::whoami))
        .route("/metrics", metrics.route())
        .nest_service(
            "/mcp",
            tower_layer::Layer::layer(
                &middleware::from_fn_with_state(state.clone(), mcp::count_streams),
                mcp::http_service(state.clone()),
            ),
        )
        .layer(middleware::from_fn_with_state(
            state.options.tokens.clone(),
            auth::require_token,
        ))
        .layer(DefaultBodyLimit::max(max_body));
    Router::new()
        .route("/healthz", get(api::healthz))
        .merge(guarded)
        .merge(console::router())
        .layer(middleware::from_fn_with_state(state.clone(), front::front))
        .with_state(state)
}

/// Serves the `codemode` tool over MCP on stdin/stdout until the client goes away.
pub async fn serve_stdio(runtime: Arc<Runtime>, options: ServerOptions) -> Result<(), ServerError> {
    mcp::serve_stdio(ServerState::new(runtime, options)).await
}
