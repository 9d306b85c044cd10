//! The command line: `serve` and the commands that work on the same database.

mod output;
mod remote;

use crate::app::{self, CommonArgs, Settings};
use crate::serve::{self, ServeArgs};
use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use codemode::{Outcome, Runtime, RuntimeError, SaveSnippet};
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Code Mode: one `codemode({code})` tool, connectors as globals, a durable log with approvals.
#[derive(Debug, Parser)]
#[command(name = "codemode", version)]
pub struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Print JSON instead of human-readable text.
    #[arg(long, global = true)]
    json: bool,
    /// A running `codemode serve` (http://HOST:PORT): run, pending, approve, reject, rollback,
    /// executions and show go through its HTTP API instead of the database (token: --token-env).
    #[arg(long, global = true, value_name = "URL")]
    server: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the MCP tool and the HTTP control API.
    Serve(ServeArgs),
    /// Serve an existing MCP server behind the single code tool, over stdio.
    Wrap {
        /// The global name of the wrapped server in the sandbox.
        #[arg(long, default_value = "server")]
        name: String,
        /// The server's command and arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Serve an OpenAPI API as two MCP tools over stdio: `search` (code over the document) and
    /// `execute` (code that calls the API, authenticated host-side).
    Openapi(crate::openapi_mcp::OpenApiArgs),
    /// Run code as a new execution: `run FILE`, `run -e CODE` or `run -` (stdin).
    Run {
        /// A file of code, or `-` for stdin.
        file: Option<PathBuf>,
        /// The code itself.
        #[arg(
            short = 'e',
            long = "eval",
            value_name = "CODE",
            conflicts_with = "file"
        )]
        code: Option<String>,
    },
    /// List actions waiting for approval.
    Pending,
    /// Approve the pending action of an execution and continue it.
    Approve {
        /// The execution id.
        id: String,
    },
    /// Reject a pending action; the execution ends `rejected`.
    Reject {
        /// The execution id.
        id: String,
        /// The pending action's seq.
        seq: u64,
    },
    /// Revert the applied actions of an execution, newest first.
    Rollback {
        /// The execution id.
        id: String,
    },
    /// List recent executions.
    Executions {
        /// How many (newest first).
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Show one execution and its log as a timeline.
    Show {
        /// The execution id.
        id: String,
    },
    /// List saved snippets.
    Snippets,
    /// Manage snippets.
    Snippet {
        #[command(subcommand)]
        command: SnippetCommand,
    },
    /// Search connector methods and snippets.
    Search {
        /// Words to look for.
        query: String,
    },
    /// TypeScript declarations of a connector, method or snippet.
    Describe {
        /// e.g. `tasks` or `tasks.create_task`.
        target: String,
    },
    /// Every declaration the sandbox offers.
    Types,
    /// Reject paused executions older than `--max-age-ms`.
    Expire {
        /// Age in milliseconds (default one day).
        #[arg(long, default_value_t = 86_400_000)]
        max_age_ms: u64,
    },
    /// Delete terminal executions beyond the newest `--keep`.
    Prune {
        /// How many to keep.
        #[arg(long, default_value_t = 50)]
        keep: usize,
    },
}

#[derive(Debug, Subcommand)]
enum SnippetCommand {
    /// Save the code of a completed execution under a name.
    Save {
        /// The snippet name.
        name: String,
        /// The execution whose code to save.
        #[arg(long = "from", value_name = "ID")]
        from: String,
        /// What it does.
        #[arg(long)]
        description: Option<String>,
        /// Save even if the execution did not complete.
        #[arg(long)]
        force: bool,
        /// Replace a snippet of the same name.
        #[arg(long)]
        replace: bool,
    },
    /// Delete a snippet.
    Delete {
        /// The snippet name.
        name: String,
    },
}

/// Runs the parsed command line.
pub async fn dispatch(cli: Cli) -> Result<ExitCode> {
    if let Command::Serve(args) = &cli.command {
        serve::run(&cli.common, args).await?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Wrap { name, command } = cli.command {
        serve::wrap(&cli.common, &name, command).await?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Openapi(args) = &cli.command {
        crate::openapi_mcp::run(&cli.common, args).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let me = app::self_command();
    if let Some(server) = &cli.server {
        let remote = remote::Remote::new(server, cli.common.token_env.as_deref())?;
        let token = cli
            .common
            .token_env
            .as_ref()
            .map_or(String::new(), |var| format!(" --token-env {var}"));
        let out = output::Printer {
            json: cli.json,
            again: format!("{me} --server {server}{token}"),
        };
        return remote_dispatch(&remote, &out, cli.json, cli.command).await;
    }
    let settings = Settings::load(&cli.common)?;
    let app = app::build(&settings).await?;
    let config = settings
        .config_path
        .as_ref()
        .map_or(String::new(), |p| format!(" --config {}", p.display()));
    let out = output::Printer {
        json: cli.json,
        again: format!("{me} {}{config}", app.store_flag),
    };
    let rt = app.runtime;
    match cli.command {
        Command::Serve(_) | Command::Wrap { .. } | Command::Openapi(_) => {
            unreachable!("handled above")
        }
        Command::Run { file, code } => {
            let code = read_code(file, code)?;
            let outcome = rt.call(&code).await?;
            return offer_approval(
                outcome,
                &out,
                cli.json,
                async |id| rt.approve(id).await.map_err(explain),
                async |id, seq| Ok(rt.reject(id, seq).await.map(drop)?),
            )
            .await;
        }
        Command::Pending => out.pending(&rt.pending(None).await?),
        Command::Approve { id } => {
            let outcome = rt.approve(&id).await.map_err(explain)?;
            out.outcome(&outcome);
            return Ok(exit_for(&outcome));
        }
        Command::Reject { id, seq } => {
            if rt.execution(&id).await?.is_none() {
                return Err(explain(RuntimeError::UnknownExecution(id)));
            }
            if !rt.reject(&id, seq).await? {
                bail!(
                    "execution {id} has no pending action {seq} (already handled, or not paused)"
                );
            }
            out.value(
                &json!({"executionId": id, "rejected": seq, "status": "rejected"}),
                &format!("rejected action {seq} of {id}; the execution is now rejected"),
            );
        }
        Command::Rollback { id } => out.rollback(&rt.rollback(&id).await.map_err(explain)?),
        Command::Executions { limit } => out.executions(&rt.executions(Some(limit)).await?),
        Command::Show { id } => match rt.execution(&id).await? {
            Some(e) => out.execution(&e),
            None => return Err(explain(RuntimeError::UnknownExecution(id))),
        },
        Command::Snippets => out.snippets(&rt.snippets().await?),
        Command::Snippet { command } => snippet(&rt, &out, command).await?,
        Command::Search { query } => {
            let found = rt.search(&query).await?;
            let v = serde_json::to_value(&found)?;
            out.value(&v, &output::search_text(&v));
        }
        Command::Describe { target } => match rt.describe(&target).await? {
            Ok(d) => {
                let v = serde_json::to_value(&d)?;
                let text = types_or_pretty(&v);
                out.value(&v, &text);
            }
            Err(message) => bail!("{message}"),
        },
        Command::Types => {
            let types = rt.types();
            out.value(&json!({ "types": types }), &types);
        }
        Command::Expire { max_age_ms } => {
            let ids = rt.expire_paused(Duration::from_millis(max_age_ms)).await?;
            out.value(
                &json!({ "expired": ids }),
                &format!("expired {} paused execution(s)", ids.len()),
            );
        }
        Command::Prune { keep } => {
            let n = rt.prune_executions(keep).await?;
            out.value(
                &json!({ "deleted": n }),
                &format!("deleted {n} execution(s)"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The commands that `--server` sends to a running server.
async fn remote_dispatch(
    remote: &remote::Remote,
    out: &output::Printer,
    json: bool,
    command: Command,
) -> Result<ExitCode> {
    match command {
        Command::Run { file, code } => {
            let code = read_code(file, code)?;
            let outcome = remote.call(&code).await?;
            return offer_approval(
                outcome,
                out,
                json,
                async |id| remote.approve(id).await,
                async |id, seq| remote.reject(id, seq).await.map(drop),
            )
            .await;
        }
        Command::Pending => out.pending(&remote.pending().await?),
        Command::Approve { id } => {
            let outcome = remote.approve(&id).await?;
            out.outcome(&outcome);
            return Ok(exit_for(&outcome));
        }
        Command::Reject { id, seq } => {
            let v = remote.reject(&id, seq).await?;
            out.value(
                &v,
                &format!("rejected action {seq} of {id}; the execution is now rejected"),
            );
        }
        Command::Rollback { id } => out.rollback(&remote.rollback(&id).await?),
        Command::Executions { limit } => out.executions(&remote.executions(limit).await?),
        Command::Show { id } => out.execution(&remote.execution(&id).await?),
        Command::Snippets => {
            let snippets: Vec<codemode::Snippet> =
                serde_json::from_value(remote.get("/api/snippets").await?)?;
            out.snippets(&snippets)
        }
        Command::Snippet { command } => match command {
            SnippetCommand::Save {
                name,
                from,
                description,
                force,
                replace,
            } => {
                let body = json!({
                    "name": name, "executionId": from, "description": description,
                    "force": force, "replace": replace,
                });
                let v = remote.post("/api/snippets", body).await?;
                let text =
                    format!("saved snippet {name}; run it with codemode.run({name:?}, input)");
                out.value(&v, &text);
            }
            SnippetCommand::Delete { name } => {
                let path = format!("/api/snippets/{}", remote::enc(&name));
                let v = remote.delete(&path).await?;
                out.value(&v, &format!("deleted snippet {name}"));
            }
        },
        Command::Search { query } => {
            let v = remote
                .get(&format!("/api/search?q={}", remote::enc(&query)))
                .await?;
            out.value(&v, &output::search_text(&v));
        }
        Command::Describe { target } => {
            let v = remote
                .get(&format!("/api/describe?target={}", remote::enc(&target)))
                .await?;
            let text = types_or_pretty(&v);
            out.value(&v, &text);
        }
        Command::Types => {
            let v = remote.get("/api/types").await?;
            let text = types_or_pretty(&v);
            out.value(&v, &text);
        }
        Command::Expire { max_age_ms } => {
            let v = remote
                .post("/api/expire", json!({ "max_age_ms": max_age_ms }))
                .await?;
            let n = v["expired"].as_array().map_or(0, Vec::len);
            out.value(&v, &format!("expired {n} paused execution(s)"));
        }
        Command::Prune { keep } => {
            let v = remote.post("/api/prune", json!({ "keep": keep })).await?;
            let n = v["deleted"].as_u64().unwrap_or(0);
            out.value(&v, &format!("deleted {n} execution(s)"));
        }
        Command::Serve(_) | Command::Wrap { .. } | Command::Openapi(_) => {
            unreachable!("handled before --server")
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn snippet(rt: &Runtime, out: &output::Printer, command: SnippetCommand) -> Result<()> {
    match command {
        SnippetCommand::Save {
            name,
            from,
            description,
            force,
            replace,
        } => {
            let s = rt
                .save_snippet(
                    &name,
                    SaveSnippet {
                        execution_id: from,
                        description,
                        input_schema: None,
                        force,
                        replace,
                    },
                )
                .await
                .map_err(explain)?;
            out.value(
                &serde_json::to_value(&s)?,
                &format!(
                    "saved snippet {}; run it with codemode.run({:?}, input)",
                    s.name, s.name
                ),
            );
        }
        SnippetCommand::Delete { name } => {
            if !rt.delete_snippet(&name).await? {
                bail!("no snippet named {name:?}");
            }
            out.value(
                &json!({ "deleted": name }),
                &format!("deleted snippet {name}"),
            );
        }
    }
    Ok(())
}

/// The `types` text of a describe or types answer, else the answer pretty-printed.
fn types_or_pretty(v: &Value) -> String {
    v.get("types")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| output::pretty(v))
}

/// Prints an outcome and, on a terminal, offers to approve or reject each pause in turn.
async fn offer_approval(
    mut outcome: Outcome,
    out: &output::Printer,
    json: bool,
    approve: impl AsyncFn(&str) -> Result<Outcome>,
    reject: impl AsyncFn(&str, u64) -> Result<()>,
) -> Result<ExitCode> {
    out.outcome(&outcome);
    while let Outcome::Paused {
        execution_id,
        pending,
    } = &outcome
    {
        if json || !interactive() {
            break;
        }
        let Some(first) = pending.first() else { break };
        match ask(&format!(
            "approve {}.{}({})? [y]es / [r]eject / anything else leaves it paused: ",
            first.connector, first.method, first.args
        ))? {
            Answer::Yes => {
                outcome = approve(execution_id).await?;
                out.outcome(&outcome);
            }
            Answer::Reject => {
                reject(execution_id, first.seq).await?;
                println!("rejected; the execution is now rejected");
                return Ok(ExitCode::from(2));
            }
            Answer::Later => break,
        }
    }
    Ok(exit_for(&outcome))
}

fn read_code(file: Option<PathBuf>, code: Option<String>) -> Result<String> {
    match (file, code) {
        (_, Some(code)) => Ok(code),
        (Some(f), None) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read code from stdin")?;
            Ok(s)
        }
        (Some(f), None) => std::fs::read_to_string(&f)
            .with_context(|| format!("cannot read code from {}", f.display())),
        (None, None) => bail!("give the code: codemode run FILE, run -e CODE, or run - (stdin)"),
    }
}

enum Answer {
    Yes,
    Reject,
    Later,
}

/// Both stdin and stdout are terminals (and the code did not come from stdin).
fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

fn ask(prompt: &str) -> Result<Answer> {
    use std::io::Write;
    print!("{prompt}");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "r" | "reject" => Answer::Reject,
        _ => Answer::Later,
    })
}

fn exit_for(outcome: &Outcome) -> ExitCode {
    match outcome {
        Outcome::Completed { .. } => ExitCode::SUCCESS,
        Outcome::Paused { .. } => ExitCode::from(3),
        Outcome::Error { .. } => ExitCode::from(2),
    }
}

fn explain(e: RuntimeError) -> anyhow::Error {
    anyhow::Error::new(e)
}
