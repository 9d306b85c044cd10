//! `codemode`: serve the Code Mode tool over MCP and HTTP, and manage executions from the shell.

use clap::Parser;
use codemode_cli::cli;
use codemode_server::telemetry;

fn main() -> std::process::ExitCode {
    // A sandbox process of this program (see `app::executor`) runs nothing else.
    codemode_quickjs::worker::run_worker_if_asked();
    // The process's default rustls provider is the program's choice: ring. The libraries'
    // clients carry their own TLS settings; this covers any other TLS client in the process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = cli::Cli::parse();
    // Log lines, and OpenTelemetry traces when an OTLP endpoint is set; kept until exit.
    let config = args.common.config.as_deref();
    let kinds = codemode_cli::app::kinds();
    let env = |v: &str| std::env::var(v).ok();
    let started = kinds.map_err(|e| e.to_string()).and_then(|kinds| {
        telemetry::init(&args.log_format, config, &kinds, env).map_err(|e| e.to_string())
    });
    let _telemetry = match started {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // Passes run on the workers (see `app::executor`): 8 MiB leaves room for the sandbox's
    // JavaScript stack and the host calls polled under it.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(8 * 1024 * 1024)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(cli::dispatch(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    };
    // No MCP server this process started outlives it (their process groups included).
    codemode_mcp::stop_all_servers(std::time::Duration::from_millis(500));
    code
}
