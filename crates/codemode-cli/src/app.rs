//! Turns the configuration and the command-line flags into a [`Runtime`].

use crate::config::{
    Config, ConnectorConfig, McpEntry, OpenApiEntry, StoreUrl, DEFAULT_LISTEN, DEFAULT_STORE,
};
use crate::demo;
use anyhow::{Context, Result};
use codemode::{Runtime, Store};
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use codemode_sqlite::SqliteStore;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Flags shared by every command; each overrides the configuration file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonArgs {
    /// The configuration file (default: ./codemode.toml if it exists).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The store: sqlite:PATH (default sqlite:./codemode.db) or postgres://USER@HOST/DB.
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// Add the built-in demo connector `tasks`.
    #[arg(long, global = true)]
    pub demo: bool,
    /// Wall-clock limit of one pass, in milliseconds.
    #[arg(long, global = true, value_name = "N")]
    pub timeout_ms: Option<u64>,
    /// Memory limit of one sandbox, in MiB.
    #[arg(long, global = true, value_name = "N")]
    pub memory_mb: Option<u64>,
    /// An MCP server over stdio as a connector: NAME="COMMAND ARGS…" (repeatable).
    #[arg(long = "mcp", global = true, value_name = "NAME=COMMAND")]
    pub mcp: Vec<String>,
    /// An MCP server over Streamable HTTP as a connector: NAME=URL (repeatable).
    #[arg(long = "mcp-url", global = true, value_name = "NAME=URL")]
    pub mcp_url: Vec<String>,
    /// The environment variable holding the bearer token: required by `serve` off loopback,
    /// sent by the CLI with `--server`.
    #[arg(long, global = true, value_name = "VAR")]
    pub token_env: Option<String>,
    /// An OpenAPI document as a connector: NAME=SPEC[@BASE_URL] (repeatable).
    #[arg(long = "openapi", global = true, value_name = "NAME=SPEC[@BASE_URL]")]
    pub openapi: Vec<String>,
}

fn split_flag<'a>(flag: &str, value: &'a str) -> Result<(&'a str, &'a str)> {
    value
        .split_once('=')
        .filter(|(n, v)| !n.is_empty() && !v.is_empty())
        .with_context(|| format!("--{flag} {value:?}: expected NAME=VALUE"))
}

/// The effective settings after flags override the file.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The parsed file (default when none).
    pub config: Config,
    /// Where the file was read from.
    pub config_path: Option<PathBuf>,
    /// Where the durable state lives.
    pub store: StoreUrl,
    /// Whether the demo connector is on.
    pub demo: bool,
    /// Wall-clock limit of one pass.
    pub timeout_ms: Option<u64>,
    /// Memory limit of one sandbox.
    pub memory_mb: Option<u64>,
}

impl Settings {
    /// Reads the configuration and applies the flags.
    pub fn load(args: &CommonArgs) -> Result<Settings> {
        let (config, config_path) = Config::load(args.config.as_deref())?;
        let store = args
            .store
            .clone()
            .or_else(|| config.store.clone())
            .unwrap_or_else(|| DEFAULT_STORE.to_string());
        let store = StoreUrl::parse(&store)
            .with_context(|| format!("--store {}", codemode_postgres::redact(&store)))?;
        let mut config = config;
        for v in &args.mcp {
            let (name, cmd) = split_flag("mcp", v)?;
            let cmd = cmd.split_whitespace().map(str::to_string).collect();
            let entry = McpEntry::from_flag(Some(cmd), None);
            config
                .connectors
                .insert(name.to_string(), ConnectorConfig::Mcp(entry));
        }
        for v in &args.mcp_url {
            let (name, url) = split_flag("mcp-url", v)?;
            let entry = McpEntry::from_flag(None, Some(url.to_string()));
            config
                .connectors
                .insert(name.to_string(), ConnectorConfig::Mcp(entry));
        }
        for v in &args.openapi {
            let (name, spec) = split_flag("openapi", v)?;
            // SPEC@BASE_URL: the base URL starts at the last '@' followed by a scheme.
            let (spec, base) = match spec.rfind("@http") {
                Some(i) => (&spec[..i], Some(spec[i + 1..].to_string())),
                None => (spec, None),
            };
            let entry = OpenApiEntry::from_flag(spec.to_string(), base);
            config
                .connectors
                .insert(name.to_string(), ConnectorConfig::Openapi(entry));
        }
        let demo = args.demo || config.demo.unwrap_or(false) || config.connectors.is_empty();
        Ok(Settings {
            timeout_ms: args.timeout_ms.or(config.limits.timeout_ms),
            memory_mb: args.memory_mb.or(config.limits.memory_mb),
            config,
            config_path,
            store,
            demo,
        })
    }

    /// The listen address: the flag, the file, or loopback.
    pub fn listen(&self, flag: Option<&str>) -> Result<SocketAddr> {
        let text = flag
            .map(str::to_string)
            .or_else(|| self.config.listen.clone())
            .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
        text.parse()
            .with_context(|| format!("listen address {text:?} is not like 127.0.0.1:7357"))
    }
}

/// A built runtime, and the connectors that could not be started.
pub struct App {
    /// The runtime.
    pub runtime: Runtime,
    /// `(connector, error)` for each configured connector that failed to start.
    pub failed: Vec<(String, String)>,
    /// The store as shown to people: the SQLite file's absolute path, or the PostgreSQL URL
    /// without its password.
    pub store_label: String,
    /// The `--store` flag that reaches the same store from another process.
    pub store_flag: String,
}

/// The store, the demo's tables on it (when the demo is on), and how to show and reach it.
pub type OpenedStore = (Arc<dyn Store>, Option<demo::Tasks>, String, String);

/// Opens the store named by the settings (and the demo's tables on it when the demo is on).
pub async fn open_store(settings: &Settings) -> Result<OpenedStore> {
    Ok(match &settings.store {
        StoreUrl::Sqlite(db_path) => {
            if let Some(dir) = db_path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create the directory {}", dir.display()))?;
            }
            let store = Arc::new(
                SqliteStore::open(db_path)
                    .with_context(|| format!("cannot open the store {}", db_path.display()))?,
            );
            let tasks = match settings.demo {
                true => Some(demo::Tasks::Sqlite(demo::TaskDb::open(store.clone())?)),
                false => None,
            };
            let abs = std::fs::canonicalize(db_path).unwrap_or_else(|_| db_path.clone());
            let label = show_path(&abs);
            let flag = format!("--store sqlite:{label}");
            (store as Arc<dyn Store>, tasks, label, flag)
        }
        StoreUrl::Postgres(url) => {
            let shown = codemode_postgres::redact(url);
            let progress = crate::progress::Progress::start(&format!("connecting to {shown}"));
            let store = codemode_postgres::PostgresStore::connect(url)
                .await
                .with_context(|| format!("cannot open the store {shown}"))?;
            let tasks = match settings.demo {
                true => Some(demo::Tasks::Postgres(demo::PgTasks::open(url).await?)),
                false => None,
            };
            progress.done();
            let flag = format!("--store {shown}");
            (Arc::new(store) as Arc<dyn Store>, tasks, shown, flag)
        }
    })
}

/// The QuickJS executor with the settings' limits. Passes run on the tokio worker that
/// handles the request (main.rs gives workers room for the sandbox's stack): a request then
/// costs no thread hand-off, and a pass still ends at its time limit.
pub fn executor(settings: &Settings) -> QuickJsExecutor {
    let mut options = QuickJsOptions::default().with_caller_thread(true);
    if let Some(ms) = settings.timeout_ms {
        options = options.with_wall_time(Duration::from_millis(ms));
    }
    if let Some(mb) = settings.memory_mb {
        options = options.with_memory_limit((mb as usize).saturating_mul(1024 * 1024));
    }
    QuickJsExecutor::new(options)
}

/// Opens the store, starts the connectors and builds the runtime.
pub async fn build(settings: &Settings) -> Result<App> {
    let (store, tasks, store_label, store_flag) = open_store(settings).await?;
    let mut builder = Runtime::builder(store, Arc::new(executor(settings)));
    if let Some(keep) = settings.config.max_executions {
        builder = builder.max_executions(keep);
    }
    if let Some(tasks) = tasks {
        builder = builder
            .connector(demo::connector(tasks))
            .hint("tasks", "the built-in demo to-do list");
    }
    let mut failed = Vec::new();
    for (name, connector) in &settings.config.connectors {
        let progress = crate::progress::Progress::start(&format!("starting connector {name}"));
        let started = start_connector(name, connector).await;
        progress.done();
        match started {
            Ok(c) => {
                builder = builder.connector_arc(c);
                if let Some(hint) = connector.hint() {
                    builder = builder.hint(name.clone(), hint);
                }
            }
            Err(e) => {
                let error = format!("{e:#}");
                tracing::warn!(connector = %name, %error, "connector not started");
                failed.push((name.clone(), error));
            }
        }
    }
    let runtime = builder.build().context("cannot build the runtime")?;
    Ok(App {
        runtime,
        failed,
        store_label,
        store_flag,
    })
}

/// Starts one configured connector; an error names the connector and why.
async fn start_connector(
    name: &str,
    config: &ConnectorConfig,
) -> Result<Arc<dyn codemode::Connector>> {
    config.check_secrets(name)?;
    match config {
        ConnectorConfig::Openapi(o) => {
            let c = codemode_openapi::OpenApiConnector::from_spec(o.to_openapi(name))
                .await
                .with_context(|| format!("connectors.{name}: cannot load {}", o.spec))?;
            Ok(Arc::new(c))
        }
        ConnectorConfig::Mcp(m) => {
            let config = m.to_mcp(name)?;
            let what = config.transport.describe();
            let c = codemode_mcp::McpConnector::connect(config)
                .await
                .with_context(|| format!("connectors.{name}: cannot start MCP server {what}"))?;
            Ok(Arc::new(c))
        }
    }
}

/// `true` for loopback addresses, which need no token.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Displays a path for the start banner.
pub fn show_path(p: &Path) -> String {
    p.display().to_string()
}

/// How to invoke this binary again: `codemode` when that is what is on the PATH, else its path.
pub fn self_command() -> String {
    let exe = std::env::current_exe().ok();
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            let candidate = dir.join("codemode");
            candidate.exists()
                && exe.as_ref().is_some_and(|e| {
                    std::fs::canonicalize(&candidate).ok() == std::fs::canonicalize(e).ok()
                })
        })
    });
    match exe {
        Some(e) if !on_path => e.display().to_string(),
        _ => "codemode".to_string(),
    }
}
