//! `codemode.toml`: the store, the listen address, limits, auth and connectors.
//!
//! Unknown keys are errors; secrets are never written in the file, only the names of the
//! environment variables that hold them.

use anyhow::{bail, Context, Result};
use codemode::policy::{ApprovalPolicy, RevertRule};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The file looked for in the working directory when `--config` is not given.
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
    /// Sandbox limits.
    #[serde(default)]
    pub limits: Limits,
    /// Bearer-token auth for the HTTP API and `/mcp`.
    #[serde(default)]
    pub auth: Auth,
    /// Connectors by global name.
    #[serde(default)]
    pub connectors: BTreeMap<String, ConnectorConfig>,
    /// Terminal executions kept when a new run begins.
    pub max_executions: Option<usize>,
}

/// Sandbox limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock limit for one pass, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Memory limit for one sandbox, in MiB.
    pub memory_mb: Option<u64>,
    /// Largest HTTP request body, in bytes (default 1 MiB).
    pub max_body_bytes: Option<usize>,
}

/// Bearer-token auth.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// The environment variable holding the bearer token.
    pub token_env: Option<String>,
}

/// A reference to a secret held in an environment variable: `{ env = "NAME" }`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SecretRef {
    /// The variable's name.
    pub env: String,
}

impl SecretRef {
    /// Reads the variable; `field` names where the reference was written, for the error.
    pub fn resolve(&self, field: &str) -> Result<String> {
        std::env::var(&self.env).with_context(|| {
            format!(
                "{field}: environment variable {} is not set (secrets are read from the environment)",
                self.env
            )
        })
    }
}

/// One connector: an MCP server or an OpenAPI document, tagged by `type`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ConnectorConfig {
    /// An MCP server.
    Mcp(McpEntry),
    /// An OpenAPI 3.x document.
    Openapi(OpenApiEntry),
}

/// An MCP server started as a child process (stdio) or reached over Streamable HTTP.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    /// The program and its arguments (stdio).
    pub command: Option<Vec<String>>,
    /// The server URL (Streamable HTTP).
    pub url: Option<String>,
    /// Environment variables for the child, each a secret reference.
    #[serde(default)]
    pub env: BTreeMap<String, SecretRef>,
    /// Fixed, non-secret HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for the server (HTTP).
    pub bearer_token_env: Option<String>,
    /// Which tools need approval.
    #[serde(default)]
    pub approval: ApprovalPolicy,
    /// Declared reverts.
    #[serde(default)]
    pub reverts: Vec<RevertRule>,
    /// Guidance for the model.
    pub instructions: Option<String>,
    /// Per-call timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// A one-line hint shown in the tool description.
    pub hint: Option<String>,
}

/// An OpenAPI 3.x document as a connector (see `codemode_openapi::OpenApiConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenApiEntry {
    /// A file path or an `http(s)://` URL of the document.
    pub spec: String,
    /// Overrides the document's `servers`.
    pub base_url: Option<String>,
    /// Credentials, each named by an environment variable.
    pub auth: Option<codemode_openapi::AuthConfig>,
    /// Which operations need approval (GET, HEAD and OPTIONS are read-only).
    #[serde(default)]
    pub approval: ApprovalPolicy,
    /// Declared reverts.
    #[serde(default)]
    pub reverts: Vec<RevertRule>,
    /// Also expose the document as `spec()`.
    #[serde(default)]
    pub expose_spec: bool,
    /// Guidance for the model.
    pub instructions: Option<String>,
    /// Per-call timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Largest response body accepted, in bytes.
    pub max_response_bytes: Option<usize>,
    /// Fixed, non-secret headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Header carrying the call's idempotency key, if the API honours one.
    pub idempotency_header: Option<String>,
    /// A one-line hint shown in the tool description.
    pub hint: Option<String>,
}

impl McpEntry {
    /// The connector crate's configuration for the global `name`, with secrets resolved.
    pub fn to_mcp(&self, name: &str) -> Result<codemode_mcp::McpConfig> {
        use codemode_mcp::{McpConfig, McpTransport};
        let transport = match (&self.command, &self.url) {
            (Some(cmd), None) if !cmd.is_empty() => {
                let mut env = BTreeMap::new();
                for (k, secret) in &self.env {
                    env.insert(k.clone(), secret.resolve(&format!("connectors.{name}.env.{k}"))?);
                }
                McpTransport::Stdio {
                    command: cmd[0].clone(),
                    args: cmd[1..].to_vec(),
                    env,
                    cwd: None,
                }
            }
            (None, Some(url)) => McpTransport::Http {
                url: url.clone(),
                headers: self.headers.clone(),
                bearer_token_env: self.bearer_token_env.clone(),
            },
            _ => bail!("connectors.{name}: give exactly one of `command` (stdio) or `url` (Streamable HTTP)"),
        };
        let mut c = McpConfig::new(name, transport);
        c.approval = self.approval.clone();
        c.reverts = self.reverts.clone();
        c.instructions = self.instructions.clone();
        if let Some(ms) = self.timeout_ms {
            c.timeout_ms = ms;
        }
        Ok(c)
    }

    /// An entry for `--mcp NAME=COMMAND` (split on whitespace) or `--mcp-url NAME=URL`.
    pub fn from_flag(command: Option<Vec<String>>, url: Option<String>) -> McpEntry {
        McpEntry {
            command,
            url,
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
            bearer_token_env: None,
            approval: ApprovalPolicy::default(),
            reverts: Vec::new(),
            instructions: None,
            timeout_ms: None,
            hint: None,
        }
    }
}

impl OpenApiEntry {
    /// An entry for `--openapi NAME=SPEC[@BASE_URL]`.
    pub fn from_flag(spec: String, base_url: Option<String>) -> OpenApiEntry {
        OpenApiEntry {
            spec,
            base_url,
            auth: None,
            approval: ApprovalPolicy::default(),
            reverts: Vec::new(),
            expose_spec: false,
            instructions: None,
            timeout_ms: None,
            max_response_bytes: None,
            headers: BTreeMap::new(),
            idempotency_header: None,
            hint: None,
        }
    }

    /// The connector crate's configuration for the global `name`.
    pub fn to_openapi(&self, name: &str) -> codemode_openapi::OpenApiConfig {
        let mut c = codemode_openapi::OpenApiConfig::new(name, self.spec.clone());
        c.base_url = self.base_url.clone();
        c.auth = self.auth.clone();
        c.approval = self.approval.clone();
        c.reverts = self.reverts.clone();
        c.expose_spec = self.expose_spec;
        c.instructions = self.instructions.clone();
        if let Some(ms) = self.timeout_ms {
            c.timeout_ms = ms;
        }
        if let Some(n) = self.max_response_bytes {
            c.max_response_bytes = n;
        }
        c.headers = self.headers.clone();
        c.idempotency_header = self.idempotency_header.clone();
        c
    }
}

impl ConnectorConfig {
    /// The hint shown in the tool description.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ConnectorConfig::Mcp(m) => m.hint.as_deref(),
            ConnectorConfig::Openapi(o) => o.hint.as_deref(),
        }
    }

    /// Checks that every secret the connector references is set; the error names the field
    /// and the variable.
    pub fn check_secrets(&self, name: &str) -> Result<()> {
        let mut refs: Vec<(String, String)> = Vec::new();
        match self {
            ConnectorConfig::Mcp(m) => {
                for (k, s) in &m.env {
                    refs.push((format!("connectors.{name}.env.{k}"), s.env.clone()));
                }
                if let Some(v) = &m.bearer_token_env {
                    refs.push((format!("connectors.{name}.bearer_token_env"), v.clone()));
                }
            }
            ConnectorConfig::Openapi(o) => {
                use codemode_openapi::AuthConfig;
                let field = format!("connectors.{name}.auth");
                match &o.auth {
                    Some(AuthConfig::Bearer { token_env }) => {
                        refs.push((format!("{field}.token_env"), token_env.clone()))
                    }
                    Some(AuthConfig::Basic {
                        username_env,
                        password_env,
                    }) => {
                        refs.push((format!("{field}.username_env"), username_env.clone()));
                        refs.push((format!("{field}.password_env"), password_env.clone()));
                    }
                    Some(AuthConfig::ApiKey { value_env, .. }) => {
                        refs.push((format!("{field}.value_env"), value_env.clone()))
                    }
                    None => {}
                }
            }
        }
        for (field, var) in refs {
            SecretRef { env: var }.resolve(&field)?;
        }
        Ok(())
    }
}

impl Config {
    /// Parses a configuration; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config> {
        let config: Config = toml::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        config.check(origin)?;
        Ok(config)
    }

    /// Loads `explicit`, or `codemode.toml` from the working directory if it exists.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>)> {
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
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        let config = Config::parse(&text, &path.display().to_string())?;
        Ok((config, Some(path)))
    }

    fn check(&self, origin: &str) -> Result<()> {
        if let Some(listen) = &self.listen {
            listen.parse::<SocketAddr>().map_err(|e| {
                anyhow::anyhow!("{origin}: field `listen`: {listen:?} is not an address like 127.0.0.1:7357 ({e})")
            })?;
        }
        if let Some(store) = &self.store {
            StoreUrl::parse(store).with_context(|| format!("{origin}: field `store`"))?;
        }
        for (name, c) in &self.connectors {
            if let ConnectorConfig::Mcp(McpEntry { command, url, .. }) = c {
                match (command, url) {
                    (Some(_), Some(_)) | (None, None) => bail!(
                        "{origin}: connectors.{name}: give exactly one of `command` (stdio) or `url` (Streamable HTTP)"
                    ),
                    (Some(cmd), None) if cmd.is_empty() => {
                        bail!("{origin}: connectors.{name}.command: must name a program")
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// Where the durable state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, shared by any number of nodes.
    Postgres(String),
}

impl StoreUrl {
    /// Parses `postgres://…` (or `postgresql://…`), `sqlite:PATH`, `sqlite://PATH` or a bare path.
    pub fn parse(url: &str) -> Result<StoreUrl> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(url.to_string()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if path.is_empty() {
            bail!("{url:?} names no file; use sqlite:PATH");
        }
        Ok(StoreUrl::Sqlite(PathBuf::from(path)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_config_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../codemode.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let config = Config::parse(&text, "codemode.example.toml").unwrap();
        assert_eq!(config.listen.as_deref(), Some(DEFAULT_LISTEN));
        assert!(!config.connectors.is_empty());
    }

    #[test]
    fn unknown_key_names_line_and_field() {
        let err = Config::parse("store = \"sqlite:x.db\"\n[limits]\ntimeout = 5\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("c.toml"), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("timeout"), "{err}");
    }

    #[test]
    fn wrong_type_names_field() {
        let err = Config::parse("[limits]\nmemory_mb = \"big\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("memory_mb") || err.contains("line 2"), "{err}");
    }

    #[test]
    fn inline_secret_is_refused() {
        let err = Config::parse(
            "[connectors.gh]\ntype = \"mcp\"\nurl = \"http://x\"\nenv = { TOKEN = \"abc\" }\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("c.toml"), "{err}");
    }

    #[test]
    fn missing_secret_names_variable() {
        let s = SecretRef {
            env: "CODEMODE_TEST_SURELY_UNSET".into(),
        };
        let err = s
            .resolve("connectors.gh.headers.Authorization")
            .unwrap_err();
        assert!(err.to_string().contains("CODEMODE_TEST_SURELY_UNSET"));
    }

    #[test]
    fn store_as_a_string_or_a_table() {
        let c = Config::parse("[store]\nurl = \"postgres://u@h/db\"\n", "c.toml").unwrap();
        assert_eq!(c.store.as_deref(), Some("postgres://u@h/db"));
        let c = Config::parse("store = \"sqlite:x.db\"\n", "c.toml").unwrap();
        assert_eq!(c.store.as_deref(), Some("sqlite:x.db"));
        let err = format!(
            "{:#}",
            Config::parse("[store]\nurll = \"x\"\n", "c.toml").unwrap_err()
        );
        assert!(err.contains("url") && err.contains("c.toml"), "{err}");
    }

    #[test]
    fn store_urls() {
        assert_eq!(
            StoreUrl::parse("sqlite:./a.db").unwrap(),
            StoreUrl::Sqlite("./a.db".into())
        );
        assert_eq!(
            StoreUrl::parse("b.db").unwrap(),
            StoreUrl::Sqlite("b.db".into())
        );
        assert_eq!(
            StoreUrl::parse("postgres://u@h/db").unwrap(),
            StoreUrl::Postgres("postgres://u@h/db".into())
        );
    }
}
