//! What `codemode.toml` says about one MCP connector.

use codemode::policy::{ApprovalPolicy, RevertRule};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Default per-call timeout.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;
/// Default time allowed for the server to start and finish the MCP handshake.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

/// One MCP server as a connector.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The global name in the sandbox.
    pub name: String,
    /// How to reach the server.
    pub transport: McpTransport,
    /// Which tools need approval (tools annotated `readOnlyHint: true` are read-only).
    #[serde(default)]
    pub approval: ApprovalPolicy,
    /// Compensating calls for rollback.
    #[serde(default)]
    pub reverts: Vec<RevertRule>,
    /// Guidance for the model; the server's own instructions when absent.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Per-call timeout in milliseconds.
    #[serde(default = "default_call_timeout")]
    pub timeout_ms: u64,
    /// Time allowed for start-up and handshake, in milliseconds.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_ms: u64,
}

fn default_call_timeout() -> u64 {
    DEFAULT_CALL_TIMEOUT_MS
}

fn default_startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_MS
}

impl McpConfig {
    /// A configuration with defaults for everything but the name and the transport.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpConfig {
            name: name.into(),
            transport,
            approval: ApprovalPolicy::default(),
            reverts: Vec::new(),
            instructions: None,
            timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
        }
    }
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpTransport {
    /// Spawn a process and speak MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment variables (the host's environment is inherited).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory.
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Fixed, non-secret headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Environment variable holding a bearer token, sent as `Authorization: Bearer …`.
        #[serde(default)]
        bearer_token_env: Option<String>,
    },
}

impl McpTransport {
    /// A stdio transport for `command` with `args`.
    pub fn stdio<S: Into<String>>(
        command: impl Into<String>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    /// A Streamable HTTP transport for `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpTransport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
            bearer_token_env: None,
        }
    }

    /// For messages: the command line or the URL.
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}
