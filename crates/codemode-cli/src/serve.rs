//! `codemode serve`: the HTTP API and MCP over HTTP, or MCP over stdio.

use crate::app::{self, CommonArgs, Settings};
use anyhow::{bail, Context, Result};
use codemode_mcp::{McpConfig, McpKind, McpTransport};
use codemode_server::admission::{AdmissionOptions, DEFAULT_MAX_QUEUED, DEFAULT_MAX_RUNNING};
use codemode_server::auth::Tokens;
use codemode_server::ServerOptions;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Flags of `codemode serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The HTTP listen address (default 127.0.0.1:7357).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Serve MCP over stdin/stdout instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
    /// Without tokens, also serve requests a reverse proxy on this machine relays (they carry
    /// Forwarded, X-Forwarded-For or X-Real-IP); that proxy must admit only clients you mean
    /// to serve, as each is served with every right.
    #[arg(long)]
    pub behind_local_proxy: bool,
}

/// Runs the server until Ctrl-C (or, with `--stdio`, until the client leaves).
pub async fn run(common: &CommonArgs, args: &ServeArgs) -> Result<()> {
    let settings = Settings::load(common)?;
    let flags = app::again_flags(&settings, common);
    serve_with(settings, args, common.token_env.clone(), flags).await
}

/// `codemode wrap -- CMD ARGS…`: an existing MCP server behind the single code tool, on stdio;
/// `description`, when given, replaces the tool's description (a `{{types}}`/`{{example}}` template).
pub async fn wrap(
    common: &CommonArgs,
    name: &str,
    description: Option<String>,
    command: Vec<String>,
) -> Result<()> {
    if command.is_empty() {
        bail!("give the MCP server to wrap: codemode wrap -- COMMAND ARGS…");
    }
    let mut settings = Settings::load(common)?;
    let transport = McpTransport::stdio(command[0].clone(), command[1..].to_vec());
    settings
        .config
        .add(McpKind::config(McpConfig::new(name, transport))?);
    settings.demo = common.demo;
    if description.is_some() {
        settings.config.tool.description = description;
    }
    let args = ServeArgs {
        listen: None,
        stdio: true,
        behind_local_proxy: false,
    };
    let wrapped = app::quote(&format!("{name}={}", command.join(" ")));
    let flags = format!("{} --mcp {wrapped}", app::again_flags(&settings, common));
    serve_with(settings, &args, None, flags).await
}

async fn serve_with(
    settings: Settings,
    args: &ServeArgs,
    token_env: Option<String>,
    flags: String,
) -> Result<()> {
    let app = app::build(&settings).await?;
    let auth = &settings.config.auth;
    let token_field = match &token_env {
        Some(var) => Some(("--token-env", var.as_str())),
        None => auth.token_env.as_deref().map(|v| ("auth.token_env", v)),
    };
    let elicitation = settings.config.approvals.elicitation;
    let wait = settings
        .config
        .approvals
        .wait_ms
        .map_or(codemode_server::DEFAULT_WAIT, Duration::from_millis);
    let result_budget = codemode::TruncateOptions {
        max_chars: None,
        max_tokens: settings.config.limits.max_result_tokens,
    };
    let me = app::self_command();
    let runtime = Arc::new(app.runtime);
    codemode_server::recover::resume_interrupted(runtime.clone(), |l| eprintln!("codemode: {l}"));
    let mut options = ServerOptions {
        failed_connectors: app.failed,
        connector_warnings: app.warnings,
        approve_hint: format!("{me} {}{flags}", app.store_flag),
        elicitation: elicitation.unwrap_or(true),
        wait,
        tool: settings.config.tool.options(),
        workspace: app.workspace,
        result_budget,
        max_batch: runtime.max_batch(),
        ..ServerOptions::default()
    };
    if args.behind_local_proxy {
        options = options.behind_local_proxy();
    }
    if args.stdio {
        tracing::info!(store = %app.store_label, "serving MCP over stdio");
        return Ok(codemode_server::serve_stdio(runtime, options).await?);
    }
    let tokens = Tokens::resolve(token_field, &auth.tokens, |v| std::env::var(v).ok())?;
    let addr = settings.listen(args.listen.as_deref())?;
    // The library refuses such clients too (a router without tokens serves loopback only);
    // refusing here says so before anything listens.
    if !app::is_loopback(&addr) && tokens.is_empty() {
        bail!("listening on {addr} (not loopback) requires a bearer token: set one in an environment variable and pass --token-env VAR (or auth.token_env, or [auth.tokens.NAME] in the config)");
    }
    let listener = codemode_server::listen::bind(addr)
        .with_context(|| format!("cannot listen on {addr} (is another codemode serve running there? pick another with --listen)"))?;
    let local = listener.local_addr()?;
    let base = format!("http://{local}");
    let token_flag = token_field.map_or(String::new(), |(_, var)| format!(" --token-env {var}"));
    let remote = format!("{me} --server {base}{token_flag}");
    let shutdown = CancellationToken::new();
    let limits = &settings.config.limits;
    options.max_body_bytes = limits
        .max_body_bytes
        .unwrap_or(codemode_server::DEFAULT_MAX_BODY_BYTES);
    options.elicitation = elicitation.unwrap_or(!tokens.has_named());
    options.tokens = tokens;
    options.listen = Some(local);
    options.allowed_hosts = auth.allowed_hosts.clone();
    options.approve_hint = remote.clone();
    options.shutdown = shutdown.clone();
    options.admission = AdmissionOptions {
        max_running: limits.max_running.unwrap_or(DEFAULT_MAX_RUNNING),
        max_queued: limits.max_queued.unwrap_or(DEFAULT_MAX_QUEUED),
    };
    options.streams = limits.stream_limits();
    eprintln!("codemode serving on {base}");
    eprintln!("  web console:           {base}/");
    eprintln!("  MCP (Streamable HTTP): {base}/mcp");
    eprintln!("  control API:           {base}/api  (health: {base}/healthz)");
    eprintln!("  store:                 {}", app.store_label);
    match &settings.config_path {
        Some(p) => eprintln!("  config:                {}", p.display()),
        None => eprintln!("  config:                none"),
    }
    eprintln!(
        "  connectors:            {}",
        runtime.connector_names().join(", ")
    );
    for (name, error) in &options.failed_connectors {
        eprintln!("  connector {name} FAILED: {error}");
    }
    for (name, warning) in &options.connector_warnings {
        eprintln!("  connector {name} warning: {warning}");
    }
    eprintln!("try:");
    let example = crate::output::example_code(&runtime);
    eprintln!("  {remote} run -e {}", app::quote(&example));
    eprintln!("  {remote} pending");
    let router = codemode_server::router(runtime, options);
    let listen_options = limits.listen_options();
    codemode_server::listen::serve(listener, router, listen_options, shutdown_signal(shutdown))
        .await;
    Ok(())
}

/// Resolves on the first Ctrl-C or SIGTERM, after ending the MCP sessions (a client's open
/// event stream would otherwise hold the server up for good); in-flight requests then finish.
/// A second signal exits at once.
async fn shutdown_signal(mcp_sessions: CancellationToken) {
    termination().await;
    eprintln!("codemode: shutting down; in-flight requests finish first (Ctrl-C again exits now)");
    mcp_sessions.cancel();
    tokio::spawn(async {
        termination().await;
        eprintln!("codemode: exiting now; a pass that was still running leaves its execution `running`, resumed by the next `codemode serve` or `codemode resume ID` once its lease runs out");
        codemode_mcp::stop_all_servers(Duration::from_millis(500));
        std::process::exit(130);
    });
}

/// Resolves on Ctrl-C or SIGTERM.
async fn termination() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
