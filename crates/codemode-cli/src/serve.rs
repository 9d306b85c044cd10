//! `codemode serve`: the HTTP API and MCP over HTTP, or MCP over stdio.

use crate::app::{self, CommonArgs, Settings};
use crate::config::{ConnectorConfig, McpEntry};
use crate::http::{self, AppState};
use crate::mcp;
use anyhow::{bail, Context, Result};
use std::sync::Arc;
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
}

/// Runs the server until Ctrl-C (or, with `--stdio`, until the client leaves).
pub async fn run(common: &CommonArgs, args: &ServeArgs) -> Result<()> {
    serve_with(Settings::load(common)?, args, common.token_env.clone()).await
}

/// `codemode wrap -- CMD ARGS…`: an existing MCP server behind the single code tool, on stdio.
pub async fn wrap(common: &CommonArgs, name: &str, command: Vec<String>) -> Result<()> {
    if command.is_empty() {
        bail!("give the MCP server to wrap: codemode wrap -- COMMAND ARGS…");
    }
    let mut settings = Settings::load(common)?;
    settings.config.connectors.insert(
        name.to_string(),
        ConnectorConfig::Mcp(McpEntry::from_flag(Some(command), None)),
    );
    settings.demo = common.demo;
    let args = ServeArgs {
        listen: None,
        stdio: true,
    };
    serve_with(settings, &args, None).await
}

async fn serve_with(settings: Settings, args: &ServeArgs, token_env: Option<String>) -> Result<()> {
    let app = app::build(&settings).await?;
    let token_env = token_env.or_else(|| settings.config.auth.token_env.clone());
    let token = match &token_env {
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.is_empty() => Some(Arc::new(t)),
            _ => bail!("the bearer token variable {var} (--token-env / auth.token_env) is not set or empty"),
        },
        None => None,
    };
    let store_flag = app.store_flag.clone();
    if args.stdio {
        let state = AppState {
            runtime: app.runtime,
            failed: Arc::new(app.failed),
            token: None,
            approve_hint: Arc::new(format!(" {store_flag}")),
        };
        tracing::info!(store = %app.store_label, "serving MCP over stdio");
        return mcp::serve_stdio(state).await;
    }
    let addr = settings.listen(args.listen.as_deref())?;
    let loopback = app::is_loopback(&addr);
    if !loopback && token.is_none() {
        bail!("listening on {addr} (not loopback) requires a bearer token: set one in an environment variable and pass --token-env VAR (or auth.token_env in the config)");
    }
    let base = format!("http://{addr}");
    let failed = Arc::new(app.failed);
    let state = AppState {
        runtime: app.runtime,
        failed: failed.clone(),
        token,
        approve_hint: Arc::new(format!(
            " {store_flag}, or POST {base}/api/executions/{{id}}/approve"
        )),
    };
    let max_body = settings.config.limits.max_body_bytes.unwrap_or(1024 * 1024);
    let shutdown = CancellationToken::new();
    let router = http::router(state, max_body, loopback, shutdown.clone());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (is another codemode serve running there? pick another with --listen)"))?;
    let local = listener.local_addr()?;
    let base = format!("http://{local}");
    eprintln!("codemode serving on {base}");
    eprintln!("  web console:           {base}/");
    eprintln!("  MCP (Streamable HTTP): {base}/mcp");
    eprintln!("  control API:           {base}/api  (health: {base}/healthz)");
    eprintln!("  store:                 {}", app.store_label);
    match &settings.config_path {
        Some(p) => eprintln!("  config:                {}", p.display()),
        None => eprintln!("  config:                none (built-in demo connector `tasks`)"),
    }
    for (name, error) in failed.iter() {
        eprintln!("  connector {name} FAILED: {error}");
    }
    let me = app::self_command();
    eprintln!("try:");
    eprintln!(
        "  {me} run {store_flag} -e 'return await tasks.create_task({{ title: \"try codemode\" }})'"
    );
    eprintln!("  {me} pending {store_flag}");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown_signal(shutdown))
        .await
        .context("HTTP server failed")?;
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
        eprintln!("codemode: exiting now; a pass that was still running leaves its execution `running` for `codemode expire`");
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
