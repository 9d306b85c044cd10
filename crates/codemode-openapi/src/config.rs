//! What `codemode.toml` says about one OpenAPI connector.

use codemode::policy::{ApprovalPolicy, RevertRule, ToolOverride};
use serde::Deserialize;
use std::collections::BTreeMap;

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
    /// The global name in the sandbox (in `codemode.toml`, the key of the connector's table).
    #[serde(default)]
    pub name: String,
    /// The document: a file path, or an `http(s)://` URL fetched at start-up.
    pub spec: String,
    /// Overrides the document's `servers`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Credentials, read from environment variables and kept host-side.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Which operations need approval (GET, HEAD and OPTIONS are read-only).
    #[serde(default)]
    pub approval: ApprovalPolicy,
    /// Compensating calls for rollback.
    #[serde(default)]
    pub reverts: Vec<RevertRule>,
    /// Also expose the document itself as `spec()`.
    #[serde(default)]
    pub expose_spec: bool,
    /// Guidance for the model; the document's `info.description` when absent.
    #[serde(default)]
    pub instructions: Option<String>,
    /// A one-line hint beside the connector's name in the tool description.
    #[serde(default)]
    pub hint: Option<String>,
    /// Per-call timeout in milliseconds (the runtime fails a call that takes longer).
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Calls of this connector in flight at once in one execution (default: `limits.max_in_flight`).
    #[serde(default)]
    pub max_in_flight: Option<usize>,
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
    /// Per-method settings (`description`, `replay`, `requires_approval`), by method name or
    /// operationId; see [`ToolOverride`].
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverride>,
    /// What the API is for, at the head of the `search` and `execute` tools' descriptions in
    /// the `codemode openapi` mode (the connector itself does not use it).
    #[serde(default)]
    pub description: Option<String>,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
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
            name: name.into(),
            spec: spec.into(),
            base_url: None,
            auth: None,
            approval: ApprovalPolicy::default(),
            reverts: Vec::new(),
            expose_spec: false,
            instructions: None,
            hint: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            max_in_flight: None,
            max_error_body: DEFAULT_MAX_ERROR_BODY,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            headers: BTreeMap::new(),
            idempotency_header: None,
            tools: BTreeMap::new(),
            description: None,
        }
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
