//! MCP servers as Code Mode connectors, over stdio (a spawned process) or Streamable HTTP.
//!
//! Each server tool becomes one method, its name sanitised into an identifier. Approval fails
//! closed: a tool annotated `readOnlyHint: true` runs, every other tool needs approval unless
//! the configuration allows it by name or glob. Reverts come from configuration (see
//! [`codemode::policy`]). A stdio server is supervised: if it dies it is restarted, calls in
//! flight fail with an error that says so, and dropping or shutting down the connector stops
//! it and its process group.

mod config;
mod connector;
mod error;
mod result;
mod session;

pub use config::{McpConfig, McpTransport, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS};
pub use connector::McpConnector;
pub use error::{Cause, ConnectError};
pub use result::map_result;

/// Installs the process-wide rustls provider (ring) unless one is installed already.
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
