//! The command line: `serve` and the commands that work on the same database.

use crate::app::{self, CommonArgs, Settings};
use crate::output;
use crate::serve::{self, ServeArgs};
use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use codemode::{Outcome, SaveSnippet};
use codemode_server::audit::{self, AuditRange};
use codemode_server::{Client, Control};
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Code Mode: one `codemode({code})` tool, connectors as globals, a durable log with approvals.
#[derive(Debug, Parser)]
#[command(name = "codemode", version)]
pub struct Cli {
    /// Flags every command shares.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print JSON instead of human-readable text.
    #[arg(long, global = true)]
    pub json: bool,
    /// How log lines on stderr look: `text`, or `json` (one object a line); levels: CODEMODE_LOG.
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Say on stderr which store (or server) the command used.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// A running `codemode serve` (http://HOST:PORT): run, pending, approve, reject, rollback,
    /// executions and show go through its HTTP API instead of the database (token: --token-env).
    #[arg(long, global = true, value_name = "URL")]
    pub server: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the MCP tool and the HTTP control API.
    Serve(ServeArgs),
    /// Serve an existing MCP server behind the single code tool, over stdio.
    Wrap {
        /// The global name of the wrapped server in the sandbox.
        #[arg(long, default_value = "server")]
        name: String,
        /// The code tool's description, replacing the generated one (and `[tool] description`):
        /// `{{types}}` becomes the wrapped server's declarations, `{{example}}` an example program.
        #[arg(long, value_name = "TEMPLATE")]
        description: Option<String>,
        /// The server's command and arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Serve an OpenAPI API as two MCP tools over stdio: `search` (code over the document) and
    /// `execute` (code that calls the API, authenticated host-side).
    Openapi(crate::openapi_cmd::OpenApiArgs),
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
    /// Take over a run left `running` by a server that stopped, once its lease expired.
    Resume {
        /// The execution id.
        id: String,
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
    /// Export every decision and every applied or reverted call in a time window, oldest first.
    Audit {
        /// The first instant included: RFC 3339 or epoch milliseconds.
        #[arg(long, value_name = "T", value_parser = codemode_server::when::parse_arg)]
        since: i64,
        /// The first instant excluded (default: now).
        #[arg(long, value_name = "T", value_parser = codemode_server::when::parse_arg)]
        until: Option<i64>,
        /// One JSON object a line, or CSV with a header row.
        #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "csv"])]
        format: String,
    },
    /// Delete terminal executions beyond the newest `--keep`.
    Prune {
        /// How many to keep.
        #[arg(long, default_value_t = 50)]
        keep: usize,
    },
}

/// What `snippet` does.
#[derive(Debug, Subcommand)]
pub enum SnippetCommand {
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
        /// The JSON Schema its `input` is checked against: JSON, or @FILE.
        #[arg(long, value_name = "JSON|@FILE")]
        input_schema: Option<String>,
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
    match cli.command {
        Command::Serve(args) => serve::run(&cli.common, &args).await?,
        Command::Wrap {
            name,
            description,
            command,
        } => serve::wrap(&cli.common, &name, description, command).await?,
        Command::Openapi(args) => crate::openapi_cmd::run(&cli.common, &args).await?,
        command => {
            let (control, again) = connect(&cli.common, cli.server.as_deref()).await?;
            if cli.verbose {
                eprintln!(
                    "codemode: using {}",
                    again.split_once(' ').map_or("", |a| a.1)
                );
            }
            let out = output::Printer {
                json: cli.json,
                again,
            };
            return commands(control.as_ref(), &out, cli.json, command).await;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The server named by `--server`, else the runtime on the configured store; and how to run
/// this binary again against the same one.
async fn connect(common: &CommonArgs, server: Option<&str>) -> Result<(Box<dyn Control>, String)> {
    let me = app::self_command();
    if let Some(server) = server {
        let token = match &common.token_env {
            Some(var) => match std::env::var(var) {
                Ok(t) if !t.is_empty() => Some(t),
                _ => bail!("the bearer token variable {var} (--token-env) is not set or empty"),
            },
            None => None,
        };
        let flag = common
            .token_env
            .as_ref()
            .map_or(String::new(), |var| format!(" --token-env {var}"));
        let again = format!("{me} --server {server}{flag}");
        return Ok((Box::new(Client::new(server, token)?), again));
    }
    let settings = Settings::load(common)?;
    let app = app::build(&settings).await?;
    let again = format!(
        "{me} {}{}",
        app.store_flag,
        app::again_flags(&settings, common)
    );
    Ok((Box::new(app.runtime), again))
}

/// The commands on executions and snippets, through `control` (the store or a server).
async fn commands(
    control: &dyn Control,
    out: &output::Printer,
    json: bool,
    command: Command,
) -> Result<ExitCode> {
    match command {
        Command::Serve(_) | Command::Wrap { .. } | Command::Openapi(_) => {
            bail!("serve, wrap and openapi start a server; they are not sent to one")
        }
        Command::Run { file, code } => {
            let outcome = control.run(&read_code(file, code)?).await?;
            return offer_approval(outcome, out, json, control).await;
        }
        Command::Pending => out.pending(&control.pending().await?),
        Command::Approve { id } => {
            let outcome = control.approve(&id).await?;
            out.outcome(&outcome);
            return Ok(exit_for(&outcome));
        }
        Command::Reject { id, seq } => {
            control.reject(&id, seq).await?;
            out.value(
                &json!({"executionId": id, "rejected": seq, "status": "rejected"}),
                &format!("rejected action {seq} of {id}; the execution is now rejected"),
            );
        }
        Command::Resume { id } => {
            let outcome = control.resume(&id).await?;
            out.outcome(&outcome);
            return Ok(exit_for(&outcome));
        }
        Command::Rollback { id } => out.rollback(&control.rollback(&id).await?),
        Command::Executions { limit } => out.executions(&control.executions(limit).await?),
        Command::Show { id } => out.execution(&control.execution(&id).await?),
        Command::Snippets => out.snippets(&control.snippets().await?),
        Command::Snippet { command } => snippet(control, out, command).await?,
        Command::Search { query } => {
            let v = control.search(&query).await?;
            out.value(&v, &output::search_text(&v));
        }
        Command::Describe { target } => {
            let v = control.describe(&target).await?;
            out.value(&v, &types_or_pretty(&v));
        }
        Command::Types => {
            let types = control.types().await?;
            out.value(&json!({ "types": types }), &types);
        }
        Command::Expire { max_age_ms } => {
            let ids = control.expire(Duration::from_millis(max_age_ms)).await?;
            let text = format!("expired {} paused execution(s)", ids.len());
            out.value(&json!({ "expired": ids }), &text);
        }
        Command::Audit {
            since,
            until,
            format,
        } => {
            let records = control.audit(AuditRange { since, until }).await?;
            print!("{}", audit::render(&records, &format));
        }
        Command::Prune { keep } => {
            let n = control.prune(keep).await?;
            out.value(
                &json!({ "deleted": n }),
                &format!("deleted {n} execution(s)"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn snippet(
    control: &dyn Control,
    out: &output::Printer,
    command: SnippetCommand,
) -> Result<()> {
    match command {
        SnippetCommand::Save {
            name,
            from,
            description,
            input_schema,
            force,
            replace,
        } => {
            let save = SaveSnippet {
                execution_id: from,
                description,
                input_schema: input_schema.as_deref().map(read_schema).transpose()?,
                force,
                replace,
            };
            let s = control.save_snippet(&name, save).await?;
            let text = format!(
                "saved snippet {}; run it with codemode.run({:?}, input)",
                s.name, s.name
            );
            out.value(&serde_json::to_value(&s)?, &text);
        }
        SnippetCommand::Delete { name } => {
            control.delete_snippet(&name).await?;
            out.value(
                &json!({ "deleted": name }),
                &format!("deleted snippet {name}"),
            );
        }
    }
    Ok(())
}

/// `--input-schema`: JSON, or `@FILE` holding it.
fn read_schema(arg: &str) -> Result<Value> {
    let (text, origin) = match arg.strip_prefix('@') {
        Some(file) => (
            std::fs::read_to_string(file)
                .with_context(|| format!("--input-schema: cannot read {file}"))?,
            file,
        ),
        None => (arg.to_string(), "the argument"),
    };
    serde_json::from_str(&text).with_context(|| format!("--input-schema: {origin} is not JSON"))
}

/// The `types` text of a describe answer, else the answer pretty-printed.
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
    control: &dyn Control,
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
                outcome = control.approve(execution_id).await?;
                out.outcome(&outcome);
            }
            Answer::Reject => {
                control.reject(execution_id, first.seq).await?;
                output::line("rejected; the execution is now rejected");
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
    let mut stdout = std::io::stdout();
    stdout.write_all(prompt.as_bytes())?;
    stdout.flush()?;
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
