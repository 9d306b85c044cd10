//! `codemode.toml`: one schema for the whole file. The server's own keys are here; each
//! `[connectors.NAME]` table is read by the registry of connector kinds
//! ([`ConnectorKinds`], [`builtin_kinds`] by default): its `type` picks the kind, whose crate
//! owns the table's other keys; the keys every kind shares are `codemode::kind`'s.
//!
//! Unknown keys are errors; an error names the file, the line and the key. Secrets are never
//! written in the file, only the names of the environment variables that hold them.

mod connectors;
mod kinds;
mod telemetry;
mod workspace;

pub use codemode::kind::{ConnectorConfig, ConnectorKinds, MissingSecret};
pub use kinds::builtin_kinds;
pub use telemetry::{check_endpoint, TelemetrySection, DEFAULT_MAX_QUEUE};
pub use workspace::WorkspaceSection;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The file looked for in the working directory when none is named.
pub const DEFAULT_FILE: &str = "codemode.toml";
/// The default store: a SQLite file in the working directory.
pub const DEFAULT_STORE: &str = "sqlite:./codemode.db";
/// The default listen address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7357";

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `sqlite:PATH` (or a bare path) or `postgres://…`; default `sqlite:./codemode.db`.
    /// Written `store = "…"` or as a table, `[store] url = "…"`.
    #[serde(default, deserialize_with = "store_setting")]
    pub store: Option<String>,
    /// The HTTP listen address; default `127.0.0.1:7357`.
    pub listen: Option<String>,
    /// Whether to add the built-in demo connector `tasks` (default: only when no connector is configured).
    pub demo: Option<bool>,
    /// Sandbox and request limits.
    #[serde(default)]
    pub limits: Limits,
    /// Bearer-token auth for the HTTP API and `/mcp`: tokens, their roles, allowed hosts.
    #[serde(default)]
    pub auth: Auth,
    /// Which channels may approve paused actions.
    #[serde(default)]
    pub approvals: Approvals,
    /// Connectors by global name: `[connectors.NAME]` with `type` a registered kind
    /// (`mcp`, `openapi`, `workspace`, and the host's own), read by [`Config::parse_with`].
    #[serde(skip)]
    pub connectors: BTreeMap<String, ConnectorConfig>,
    /// The `[connectors]` tables as written, until [`Config::parse_with`] reads them.
    #[serde(default, rename = "connectors")]
    tables: connectors::Tables,
    /// Terminal executions kept when a new run begins.
    pub max_executions: Option<usize>,
    /// What retention keeps beyond `max_executions`.
    #[serde(default)]
    pub retention: RetentionSection,
    /// The runtime's name: its executions and snippets in the store (default `default`).
    pub runtime: Option<String>,
    /// The `codemode` tool as the model sees it.
    #[serde(default)]
    pub tool: ToolSection,
    /// The durable files the sandbox reaches as `state` (on by default).
    #[serde(default)]
    pub workspace: WorkspaceSection,
    /// OpenTelemetry traces (off unless an endpoint is set).
    #[serde(default)]
    pub telemetry: TelemetrySection,
    /// Where passes run: `[sandbox] isolation`.
    #[serde(default)]
    pub sandbox: SandboxSection,
}

/// `[sandbox]`: where passes run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// `process` (default): each pass in a confined sandbox process, killed at its deadline;
    /// `thread`: in this process, on its threads.
    #[serde(default)]
    pub isolation: Isolation,
}

/// Where passes run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// In sandbox processes that can always be killed.
    #[default]
    Process,
    /// On this process's threads.
    Thread,
}

/// `[retention]`: what pruning keeps beyond `max_executions`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSection {
    /// Days a finished execution holding a write still applied (approved or not, not reverted) is
    /// kept after its last update, however many runs follow, so that it can be audited and
    /// rolled back (default 7).
    pub min_age_days: Option<u64>,
    /// Days the audit archive keeps the audit record (decisions, applied and reverted
    /// calls) of a pruned or deleted execution after its last update; older records are
    /// deleted when prunes run (default 90).
    pub audit_max_age_days: Option<u64>,
}

impl RetentionSection {
    /// How long pruning keeps an execution with a write still applied.
    pub fn min_age(&self) -> std::time::Duration {
        match self.min_age_days {
            Some(days) => std::time::Duration::from_secs(days.saturating_mul(24 * 60 * 60)),
            None => codemode::DEFAULT_RETENTION_MIN_AGE,
        }
    }

    /// How long the audit archive keeps a pruned or deleted execution's audit record.
    pub fn audit_max_age(&self) -> std::time::Duration {
        match self.audit_max_age_days {
            Some(days) => std::time::Duration::from_secs(days.saturating_mul(24 * 60 * 60)),
            None => codemode::DEFAULT_AUDIT_MAX_AGE,
        }
    }
}

/// `[tool]`: the `codemode` tool as the model sees it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSection {
    /// A description replacing the generated one: `{{types}}` becomes every declaration,
    /// `{{example}}` an example program; any other placeholder is an error at start.
    pub description: Option<String>,
    /// The token budget of the generated description (default 2,000): connectors'
    /// declarations are put in, each whole, only while the description fits it.
    pub max_description_tokens: Option<usize>,
}

impl ToolSection {
    /// The options the runtime's tool is built with.
    pub fn options(&self) -> codemode::runtime::ToolOptions {
        codemode::runtime::ToolOptions {
            description: self.description.clone(),
            max_description_tokens: self.max_description_tokens,
        }
    }
}

/// Sandbox and request limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock limit for one pass, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Memory limit for one sandbox, in MiB.
    pub memory_mb: Option<u64>,
    /// Largest HTTP request body, in bytes (default 1 MiB).
    pub max_body_bytes: Option<usize>,
    /// How long a connection may take to send a request's headers, in milliseconds
    /// (default 30,000).
    pub header_timeout_ms: Option<u64>,
    /// How long a connection may sit with no request in flight (before its first request or
    /// between two) before it is closed, in milliseconds (default 15,000).
    pub idle_timeout_ms: Option<u64>,
    /// Open HTTP connections served at once (default 512); past it a new connection closes
    /// the one idle longest, and when none is idle it is answered 503 and closed.
    pub max_connections: Option<usize>,
    /// Connections past `max_connections` kept for short requests, which no stream may use
    /// (default 64).
    pub reserved_connections: Option<usize>,
    /// Event streams (`/api/events`, an execution's events, `GET /mcp`) open at once
    /// (default 128); more are answered 503 with `Retry-After`.
    pub max_event_streams: Option<usize>,
    /// Event streams open at once for one token (or one address when no token is needed)
    /// (default 16); more are answered 429 with `Retry-After`.
    pub max_event_streams_per_client: Option<usize>,
    /// Passes (runs, approvals, resumes) running at once (default 64); more wait in line.
    pub max_running: Option<usize>,
    /// Requests waiting in line for a pass to end (default 256); more are answered 503 with
    /// `Retry-After`, and nothing of them runs.
    pub max_queued: Option<usize>,
    /// Calls of one connector in flight at once in one execution (default 8); a connector's
    /// own `max_in_flight` overrides it.
    pub max_in_flight: Option<usize>,
    /// Connector calls in flight at once in one execution, all connectors together (default 32).
    pub max_in_flight_per_execution: Option<usize>,
    /// How long a pass holds its execution, in milliseconds (default 120,000, at least twice
    /// `timeout_ms`); a run whose node stopped is resumed once it has run out.
    pub lease_ms: Option<u64>,
    /// The most tokens (four characters each) of an outcome an MCP tool call returns; a
    /// larger one is cut structurally and kept whole in the workspace (default 6,000; 0 and
    /// huge values are clamped to 50..=250,000).
    pub max_result_tokens: Option<usize>,
}

impl Limits {
    /// How the listener accepts and keeps connections, as these limits say (defaults where
    /// unset).
    pub fn listen_options(&self) -> crate::listen::ListenOptions {
        let d = crate::listen::ListenOptions::default();
        let ms = |v: Option<u64>, default| v.map_or(default, std::time::Duration::from_millis);
        crate::listen::ListenOptions {
            header_timeout: ms(self.header_timeout_ms, d.header_timeout),
            idle_timeout: ms(self.idle_timeout_ms, d.idle_timeout),
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            reserve: self.reserved_connections.unwrap_or(d.reserve),
        }
    }

    /// How many event streams may be open, as these limits say (defaults where unset).
    pub fn stream_limits(&self) -> crate::events::StreamLimits {
        let d = crate::events::StreamLimits::default();
        crate::events::StreamLimits {
            max_streams: self.max_event_streams.unwrap_or(d.max_streams),
            max_per_client: self
                .max_event_streams_per_client
                .unwrap_or(d.max_per_client),
        }
    }
}

/// Bearer-token auth.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// The environment variable holding one admin token (named `admin`).
    pub token_env: Option<String>,
    /// Named tokens: `[auth.tokens.NAME] env = "VAR", role = "run" | "approve" | "admin"`.
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenConfig>,
    /// Extra `Host` values the server answers to (`name` or `name:port`), beside the listen
    /// address and `localhost`, `127.0.0.1` and `[::1]` with its port.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

pub use crate::auth::TokenConfig;

/// Which channels may approve paused actions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approvals {
    /// Whether accepting an MCP elicitation approves (default: true with `--stdio` or
    /// without named tokens, false once `[auth.tokens]` exist).
    pub elicitation: Option<bool>,
    /// How long an MCP tool call (or `POST /api/run?wait_ms=N`, at most this) waits for a
    /// decision on a paused run before it returns it paused, in milliseconds (default 50,000).
    pub wait_ms: Option<u64>,
    /// The most actions one pause proposes (default 25, 1 to 1,000); the others the code
    /// started wait and are proposed, in seq order, once these are decided.
    pub max_batch: Option<usize>,
}

/// A configuration that cannot be used: where, and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a valid configuration (the message names the line and the key).
    #[error("{origin}: {message}")]
    Invalid {
        /// The file (or other origin) of the text.
        origin: String,
        /// What is wrong and where.
        message: String,
    },
    /// The `[workspace]` section cannot be added beside the connectors (flags added one
    /// of its name).
    #[error("[workspace]: {0}")]
    Workspace(String),
}

impl Config {
    /// Parses a configuration whose connectors are of the [`builtin_kinds`]; `origin` names
    /// the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let kinds = builtin_kinds().map_err(|e| ConfigError::Invalid {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        Config::parse_with(text, origin, &kinds)
    }

    /// Parses a configuration whose connectors are of `kinds`; `origin` names the file in
    /// errors, and a table whose `type` is none of them is an error listing them.
    pub fn parse_with(
        text: &str,
        origin: &str,
        kinds: &ConnectorKinds,
    ) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            message,
        };
        let mut config: Config = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let tables = std::mem::take(&mut config.tables);
        config.connectors = connectors::read(tables, text, kinds).map_err(invalid)?;
        if let Some(listen) = &config.listen {
            listen.parse::<SocketAddr>().map_err(|e| {
                invalid(format!(
                    "field `listen`: {listen:?} is not an address like 127.0.0.1:7357 ({e})"
                ))
            })?;
        }
        config.check_bounds().map_err(invalid)?;
        config.telemetry.check().map_err(invalid)?;
        config
            .workspace
            .check(config.connectors.keys())
            .map_err(invalid)?;
        Ok(config)
    }

    /// Refuses call caps and run places of 0, naming the key (a connector's own are checked
    /// with its table).
    fn check_bounds(&self) -> Result<(), String> {
        let zero = |key: String, what: &str| {
            Err(format!(
                "`{key} = 0` would {what}; use at least 1, or leave it out for the default"
            ))
        };
        let no_call = "let no call run";
        if self.limits.max_in_flight == Some(0) {
            return zero("limits.max_in_flight".into(), no_call);
        }
        if self.limits.max_in_flight_per_execution == Some(0) {
            return zero("limits.max_in_flight_per_execution".into(), no_call);
        }
        if self.limits.max_running == Some(0) {
            return zero("limits.max_running".into(), "let no run start");
        }
        if self.approvals.max_batch == Some(0) {
            return zero(
                "approvals.max_batch".into(),
                "propose no action and leave every paused run waiting forever",
            );
        }
        if let Some(n) = self
            .approvals
            .max_batch
            .filter(|n| *n > codemode::MAX_MAX_BATCH)
        {
            return Err(format!(
                "`approvals.max_batch = {n}` is over the limit of {}: a pause that proposes that many actions cannot be shown to a model or decided by a person; use at most {} (default {})",
                codemode::MAX_MAX_BATCH,
                codemode::MAX_MAX_BATCH,
                codemode::DEFAULT_MAX_BATCH
            ));
        }
        Ok(())
    }

    /// Loads `explicit`, or `codemode.toml` from the working directory if it exists, with
    /// the [`builtin_kinds`].
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let kinds = builtin_kinds().map_err(|e| ConfigError::Invalid {
            origin: DEFAULT_FILE.to_string(),
            message: e.to_string(),
        })?;
        Config::load_with(explicit, &kinds)
    }

    /// [`Config::load`] with the connector kinds `kinds`.
    pub fn load_with(
        explicit: Option<&Path>,
        kinds: &ConnectorKinds,
    ) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None => {
                let p = PathBuf::from(DEFAULT_FILE);
                if !p.exists() {
                    return Ok((Config::default(), None));
                }
                p
            }
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let config = Config::parse_with(&text, &path.display().to_string(), kinds)?;
        Ok((config, Some(path)))
    }

    /// Adds (or replaces) a connector, as `--mcp`, `--openapi` and `wrap` do.
    pub fn add(&mut self, connector: ConnectorConfig) {
        self.connectors
            .insert(connector.name().to_string(), connector);
    }

    /// What to start: the configured connectors by name, then the `[workspace]` section's
    /// (last, so the configured ones come first in listings) unless it is off; refuses a
    /// workspace global that a connector added after parsing has taken.
    pub fn connectors_to_start(&self) -> Result<Vec<ConnectorConfig>, ConfigError> {
        let mut out: Vec<ConnectorConfig> = self.connectors.values().cloned().collect();
        let workspace = self
            .workspace
            .connector(self.connectors.keys())
            .map_err(ConfigError::Workspace)?;
        out.extend(workspace);
        Ok(out)
    }
}

/// Reads `store = "URL"` or `[store] url = "URL"`.
fn store_setting<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct StoreVisitor;
    impl<'de> serde::de::Visitor<'de> for StoreVisitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a store URL string, or a table with `url`")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut url = None;
            while let Some(key) = map.next_key::<String>()? {
                if key != "url" {
                    return Err(serde::de::Error::unknown_field(&key, &["url"]));
                }
                url = Some(map.next_value::<String>()?);
            }
            url.map(Some)
                .ok_or_else(|| serde::de::Error::missing_field("url"))
        }
    }
    d.deserialize_any(StoreVisitor)
}
