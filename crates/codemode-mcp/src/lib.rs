//! MCP servers as Code Mode connectors, over stdio (a spawned process) or Streamable HTTP.
//!
//! Each server tool becomes one method, its name sanitised into an identifier. Approval fails
//! closed: a tool annotated `readOnlyHint: true` runs, every other tool needs approval unless
//! the configuration allows it by name or glob. Reverts come from configuration (see
//! [`codemode::policy`]). A stdio server is supervised: if it dies it is restarted, calls in
//! flight fail with an error that says so, and dropping or shutting down the connector stops
//! it and its process group; [`stop_all_servers`] stops every server at exit. A stdio server
//! gets a minimal environment ([`INHERITED_ENV`]) plus exactly what its configuration names.
//! Tools that cannot be used (a schema that does not compile, a name that collides) are left
//! out or renamed with a warning ([`McpConnector::warnings`]) instead of failing the connector.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod children;
mod config;
mod connector;
mod env;
mod error;
mod kind;
mod names;
mod result;
mod session;
mod tools;

pub use children::{server_process_groups, stop_all_servers};
pub use config::{
    CommandLineError, McpConfig, McpTransport, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS,
};
pub use connector::{ClientOptions, McpConnector};
pub use env::{EnvValue, INHERITED_ENV};
pub use error::{Cause, ConnectError};
pub use kind::McpKind;
pub use result::map_result;
