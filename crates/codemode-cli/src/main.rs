//! `codemode`: serve the Code Mode tool over MCP and HTTP, and manage executions from the shell.

mod app;
mod cli;
mod config;
mod console;
mod demo;
mod http;
mod mcp;
mod openapi_mcp;
mod progress;
mod serve;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODEMODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
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
    match runtime.block_on(cli::dispatch(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
