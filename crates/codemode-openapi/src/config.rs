//! What `codemode.toml` says about one OpenAPI connector.

use codemode::kind::ConnectorSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Default per-call timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default bound on the response body quoted in an HTTP error.
pub const DEFAULT_MAX_ERROR_BODY: usize = 2_000;
/// Default bound on a response body.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 10 * 1024 * 1024;

/// One OpenAPI connector (in `codemode.toml`, a `[connectors.NAME]` table with
/// `type = "openapi"`; see the crate README).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenApiConfig {
    /// The keys every kind shares: the global name, `hint`, `max_in_flight`, `timeout_ms`
    /// (default [`DEFAULT_TIMEOUT_MS`]), and the policy: `approval` (GET, HEAD and OPTIONS
    /// are read-only), `reverts`, and `tools` (per-method `description`, `replay`,
    /// `requires_approval`, by method name or operationId).
    #[serde(flatten)]
    pub settings: ConnectorSettings,
    /// The document: a file path, or an `http(s)://` URL fetched at start-up.
    pub spec: String,
    /// Overrides the document's `servers`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Credentials, read from environment variables and kept host-side.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Also expose the document itself as `spec()`.
    #[serde(default)]
    pub expose_spec: bool,
    /// Guidance for the model; the document's `info.description` when absent.
    #[serde(default)]
    pub instructions: Option<String>,
    /// How much of an error response's body is quoted, in characters.
    #[serde(default = "default_max_error_body")]
    pub max_error_body: usize,
    /// Largest response body accepted, in bytes.
    #[serde(default = "default_max_response")]
    pub max_response_bytes: usize,
    /// Fixed, non-secret headers sent with every request (`User-Agent`, `Accept`…).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Header that carries the call's idempotency key (`execution:seq`), if the API honours one.
    #[serde(default)]
    pub idempotency_header: Option<String>,
    /// What the API is for, at the head of the `search` and `execute` tools' descriptions in
    /// the `codemode openapi` mode (the connector itself does not use it).
    #[serde(default)]
    pub description: Option<String>,
}

fn default_max_error_body() -> usize {
    DEFAULT_MAX_ERROR_BODY
}

fn default_max_response() -> usize {
    DEFAULT_MAX_RESPONSE_BYTES
}

impl OpenApiConfig {
    /// A configuration with defaults for everything but the name and the document.
    pub fn new(name: impl Into<String>, spec: impl Into<String>) -> Self {
        OpenApiConfig {
            settings: ConnectorSettings::new(name),
            spec: spec.into(),
            base_url: None,
            auth: None,
            expose_spec: false,
            instructions: None,
            max_error_body: DEFAULT_MAX_ERROR_BODY,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            headers: BTreeMap::new(),
            idempotency_header: None,
            description: None,
        }
    }

    /// The global name in the sandbox.
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// How long one call may take: `timeout_ms`, else [`DEFAULT_TIMEOUT_MS`].
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.settings.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))
    }
}

/// How requests authenticate; every secret is named by an environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthConfig {
    /// `Authorization: Bearer <token>`.
    Bearer {
        /// Variable holding the token.
        token_env: String,
    },
    /// `Authorization: Basic base64(user:password)`.
    Basic {
        /// Variable holding the user name.
        username_env: String,
        /// Variable holding the password.
        password_env: String,
    },
    /// A key in a header or a query parameter.
    ApiKey {
        /// `header` or `query`.
        #[serde(rename = "in")]
        location: ApiKeyLocation,
        /// The header or parameter name.
        name: String,
        /// Variable holding the key.
        value_env: String,
    },
}

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyLocation {
    /// A request header.
    Header,
    /// A query parameter.
    Query,
}
