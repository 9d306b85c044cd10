//! `codemode.toml`: the store, the listen address, limits, auth and connectors.
//!
//! Unknown keys are errors; secrets are never written in the file, only the names of the
//! environment variables that hold them.

use anyhow::{bail, Context, Result};
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
    /// `sqlite:PATH` (or a bare path); default `sqlite:./codemode.db`.
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

/// One connector: an MCP server or an OpenAPI document.
#[allow(dead_code)] // the connector crates read these fields once they are wired in
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum ConnectorConfig {
    /// An MCP server started as a child process (stdio) or reached over Streamable HTTP.
    Mcp {
        /// The command and its arguments (stdio).
        command: Option<Vec<String>>,
        /// The server URL (Streamable HTTP).
        url: Option<String>,
        /// Environment variables for the child, each a secret reference.
        #[serde(default)]
        env: BTreeMap<String, SecretRef>,
        /// HTTP headers, each a secret reference.
        #[serde(default)]
        headers: BTreeMap<String, SecretRef>,
        /// Which tools need approval.
        #[serde(default)]
        approval: codemode::policy::ApprovalPolicy,
        /// Declared reverts.
        #[serde(default)]
        reverts: Vec<toml::Value>,
        /// A one-line hint shown in the tool description.
        hint: Option<String>,
    },
    /// An OpenAPI 3.x document.
    Openapi {
        /// A path or URL of the document.
        spec: String,
        /// The API base URL, when the document's is not the one to use.
        base_url: Option<String>,
        /// HTTP headers, each a secret reference.
        #[serde(default)]
        headers: BTreeMap<String, SecretRef>,
        /// Which operations need approval.
        #[serde(default)]
        approval: codemode::policy::ApprovalPolicy,
        /// Declared reverts.
        #[serde(default)]
        reverts: Vec<toml::Value>,
        /// A one-line hint shown in the tool description.
        hint: Option<String>,
    },
}

impl ConnectorConfig {
    /// Reads every secret the connector references: `(field, value)`, or an error naming the
    /// field and the variable that is not set.
    pub fn resolve_secrets(&self, name: &str) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        let (env, headers) = match self {
            ConnectorConfig::Mcp { env, headers, .. } => (Some(env), headers),
            ConnectorConfig::Openapi { headers, .. } => (None, headers),
        };
        for (key, secret) in env.into_iter().flatten() {
            let field = format!("connectors.{name}.env.{key}");
            out.push((key.clone(), secret.resolve(&field)?));
        }
        for (key, secret) in headers {
            let field = format!("connectors.{name}.headers.{key}");
            out.push((key.clone(), secret.resolve(&field)?));
        }
        Ok(out)
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
            if let ConnectorConfig::Mcp { command, url, .. } = c {
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
}

impl StoreUrl {
    /// Parses `sqlite:PATH`, `sqlite://PATH` or a bare path.
    pub fn parse(url: &str) -> Result<StoreUrl> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            bail!("postgres stores are not available in this build; use sqlite:PATH");
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
            "[connectors.gh]\ntype = \"mcp\"\nurl = \"http://x\"\nheaders = { Authorization = \"Bearer abc\" }\n",
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
    fn store_urls() {
        assert_eq!(
            StoreUrl::parse("sqlite:./a.db").unwrap(),
            StoreUrl::Sqlite("./a.db".into())
        );
        assert_eq!(
            StoreUrl::parse("b.db").unwrap(),
            StoreUrl::Sqlite("b.db".into())
        );
        assert!(StoreUrl::parse("postgres://x").is_err());
    }
}
