//! Turns the configuration and the command-line flags into a [`Runtime`].

use crate::config::{self, StoreUrl};
pub use crate::output::shell_word as quote;
use anyhow::{Context, Result};
use codemode::kind::{ConnectorKinds, HostResources};
use codemode::{Executor, Runtime, StoreWithFiles};
use codemode_demo as demo;
use codemode_mcp::{McpConfig, McpKind, McpTransport};
use codemode_openapi::{OpenApiConfig, OpenApiKind};
use codemode_quickjs::{
    ProcessExecutor, ProcessOptions, QuickJsExecutor, QuickJsOptions, WorkerCommand,
};
use codemode_server::config::{Config, Isolation, DEFAULT_LISTEN, DEFAULT_STORE};
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
    /// The runtime's name: which executions and snippets of the store are its own (default `default`).
    #[arg(long, global = true, value_name = "NAME")]
    pub runtime: Option<String>,
}

fn split_flag<'a>(flag: &str, value: &'a str) -> Result<(&'a str, &'a str)> {
    value
        .split_once('=')
        .filter(|(n, v)| !n.is_empty() && !v.is_empty())
        .with_context(|| format!("--{flag} {value:?}: expected NAME=VALUE"))
}

/// The connector kinds this binary starts: the server's built-in kinds and the demo's.
pub fn kinds() -> Result<ConnectorKinds> {
    Ok(codemode_server::config::builtin_kinds()?.with(demo::DemoKind)?)
}

/// The effective settings after flags override the file.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The connector kinds its tables are read with and its connectors started by.
    pub kinds: ConnectorKinds,
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
        let kinds = kinds()?;
        let (config, config_path) = config::load(args.config.as_deref(), &kinds)?;
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
            let transport = McpTransport::stdio_command_line(cmd)
                .with_context(|| format!("--mcp {name}={cmd}"))?;
            config.add(McpKind::config(McpConfig::new(name, transport))?);
        }
        for v in &args.mcp_url {
            let (name, url) = split_flag("mcp-url", v)?;
            config.add(McpKind::config(McpConfig::new(
                name,
                McpTransport::http(url),
            ))?);
        }
        for v in &args.openapi {
            let (name, spec) = split_flag("openapi", v)?;
            // SPEC@BASE_URL: the base URL starts at the last '@' followed by a scheme.
            let (spec, base) = match spec.rfind("@http") {
                Some(i) => (&spec[..i], Some(spec[i + 1..].to_string())),
                None => (spec, None),
            };
            let mut entry = OpenApiConfig::new(name, spec);
            entry.base_url = base;
            config.add(OpenApiKind::config(entry)?);
        }
        if let Some(name) = &args.runtime {
            config.runtime = Some(name.clone());
        }
        let demo = args.demo || config.demo.unwrap_or(false) || config.connectors.is_empty();
        Ok(Settings {
            kinds,
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
    /// `(connector, warning)` for what a started connector left out or renamed.
    pub warnings: Vec<(String, String)>,
    /// The store as shown to people: the SQLite file's absolute path, or the PostgreSQL URL
    /// without its password.
    pub store_label: String,
    /// The `--store` flag that reaches the same store from another process.
    pub store_flag: String,
    /// The workspace the sandbox reaches as `state` (`[workspace]`); `None` when it is off.
    pub workspace: Option<codemode_workspace::Workspace>,
}

/// The store, the demo's tables on it (when the demo is on), and how to show and reach it.
pub type OpenedStore = (Arc<dyn StoreWithFiles>, Option<demo::Tasks>, String, String);

/// Opens the store named by the settings (and the demo's tables on it when the demo is on).
pub async fn open_store(settings: &Settings) -> Result<OpenedStore> {
    let configured = settings.config.connectors.values();
    let keeps_tasks = settings.demo || configured.into_iter().any(|c| c.kind() == demo::DEMO_KIND);
    Ok(match &settings.store {
        StoreUrl::Sqlite(db_path) => {
            if let Some(dir) = db_path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create the directory {}", dir.display()))?;
            }
            let fresh = !db_path.exists();
            let store = Arc::new(
                SqliteStore::open(db_path)
                    .with_context(|| format!("cannot open the store {}", db_path.display()))?
                    .with_retention_min_age(settings.config.retention.min_age())
                    .with_audit_max_age(settings.config.retention.audit_max_age()),
            );
            let tasks = match keeps_tasks {
                true => Some(demo::Tasks::Sqlite(demo::TaskDb::open(
                    demo::TaskDb::path_beside(db_path),
                )?)),
                false => None,
            };
            let abs = std::fs::canonicalize(db_path).unwrap_or_else(|_| db_path.clone());
            let label = show_path(&abs);
            if fresh {
                eprintln!("codemode: created a new store {label}");
            }
            let flag = format!("--store {}", quote(&format!("sqlite:{label}")));
            (store as Arc<dyn StoreWithFiles>, tasks, label, flag)
        }
        StoreUrl::Postgres(url) => {
            let shown = codemode_postgres::redact(url);
            let progress = crate::progress::Progress::start(&format!("connecting to {shown}"));
            let store = codemode_postgres::PostgresStore::connect(url)
                .await
                .with_context(|| format!("cannot open the store {shown}"))?
                .with_retention_min_age(settings.config.retention.min_age())
                .with_audit_max_age(settings.config.retention.audit_max_age());
            let tasks = match keeps_tasks {
                true => Some(demo::Tasks::Postgres(demo::PgTasks::open(url).await?)),
                false => None,
            };
            progress.done();
            // The hints print a command that runs as printed: the URL without its password,
            // which the command then reads from PGPASSWORD (as psql does).
            let flag = match codemode_postgres::without_password(url) {
                Some(printable) => {
                    eprintln!("codemode: the commands printed leave the store's password out: set PGPASSWORD to it to run them");
                    format!("--store {}", quote(&printable))
                }
                None => format!("--store {}", quote(url)),
            };
            (Arc::new(store) as _, tasks, shown, flag)
        }
    })
}

/// The executor with the settings' limits: by default sandbox processes of this program,
/// killed at the deadline; with `[sandbox] isolation = "thread"`, passes on the tokio workers.
pub async fn executor(settings: &Settings) -> Result<Arc<dyn Executor>> {
    let mut options = QuickJsOptions::default();
    if let Some(ms) = settings.timeout_ms {
        options = options.with_wall_time(Duration::from_millis(ms));
    }
    if let Some(mb) = settings.memory_mb {
        options = options.with_memory_limit((mb as usize).saturating_mul(1024 * 1024));
    }
    if settings.config.sandbox.isolation == Isolation::Thread {
        return Ok(Arc::new(QuickJsExecutor::new(
            options.with_caller_thread(true),
        )));
    }
    let command = WorkerCommand::current_exe().context("cannot find this program")?;
    let start = ProcessExecutor::start(options, ProcessOptions::new(command)).await;
    Ok(Arc::new(start.context("[sandbox] isolation = \"process\": sandbox processes cannot start; isolation = \"thread\" runs passes in this process")?))
}

/// Opens the store, starts the connectors and builds the runtime.
pub async fn build(settings: &Settings) -> Result<App> {
    let (store, tasks, store_label, store_flag) = open_store(settings).await?;
    let workspace = settings
        .config
        .workspace
        .open(store.clone())
        .context("[workspace] in codemode.toml")?;
    // What this host provides the connector kinds: the store, and where the demo's tasks are.
    let files: Arc<dyn codemode::FileStore> = store.clone();
    let mut host = HostResources::new().with(files);
    if let Some(tasks) = tasks {
        host.insert(tasks);
    }
    let mut builder = Runtime::builder(store, executor(settings).await?);
    if let Some(carrier) = codemode_server::telemetry::carrier() {
        builder = builder.trace_carrier(carrier);
    }
    if let Some(keep) = settings.config.max_executions {
        builder = builder.max_executions(keep);
    }
    if let Some(name) = &settings.config.runtime {
        builder = builder.name(name.clone());
    }
    let limits = &settings.config.limits;
    if let Some(n) = limits.max_in_flight {
        builder = builder.max_in_flight(n);
    }
    if let Some(n) = limits.max_in_flight_per_execution {
        builder = builder.max_in_flight_per_execution(n);
    }
    if let Some(n) = settings.config.approvals.max_batch {
        builder = builder.max_batch(n);
    }
    if let Some(ms) = limits.lease_ms {
        builder = builder.lease(Duration::from_millis(ms));
    }
    // The demo first, then the configured connectors, then the workspace, each started by
    // its kind.
    let mut connectors = Vec::new();
    if settings.demo {
        connectors.push(demo::DemoKind::config()?);
    }
    connectors.extend(settings.config.connectors_to_start()?);
    let progress = crate::progress::Progress::start("starting connectors");
    let started =
        codemode_server::start_connectors(&settings.kinds, &connectors, &host, builder).await;
    progress.done();
    let runtime = started
        .builder
        .build()
        .context("cannot build the runtime")?;
    runtime
        .tool_with(settings.config.tool.options())
        .context("[tool] description")?;
    Ok(App {
        runtime,
        failed: started.failed,
        warnings: started.warnings,
        store_label,
        store_flag,
        workspace,
    })
}

/// The flags that build the same runtime in another process: the config file, the demo, the
/// connectors, limits and runtime name given on this command line, each quoted for a shell.
pub fn again_flags(settings: &Settings, common: &CommonArgs) -> String {
    let mut flags: Vec<(&str, String)> = Vec::new();
    if let Some(p) = &settings.config_path {
        flags.push(("config", p.display().to_string()));
    }
    flags.extend(common.mcp.iter().map(|v| ("mcp", v.clone())));
    flags.extend(common.mcp_url.iter().map(|v| ("mcp-url", v.clone())));
    flags.extend(common.openapi.iter().map(|v| ("openapi", v.clone())));
    flags.extend(common.timeout_ms.map(|n| ("timeout-ms", n.to_string())));
    flags.extend(common.memory_mb.map(|n| ("memory-mb", n.to_string())));
    flags.extend(common.runtime.clone().map(|r| ("runtime", r)));
    let mut out: String = flags
        .iter()
        .map(|(f, v)| format!(" --{f} {}", quote(v)))
        .collect();
    if common.demo {
        out.push_str(" --demo");
    }
    out
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
