//! The shape an MCP connector is written in (a `[connectors.NAME]` table with `type = "mcp"`
//! in `codemode.toml`): the transport's keys sit in the table itself, and old shapes are
//! refused with what to write instead.

use super::{McpConfig, McpTransport, DEFAULT_STARTUP_TIMEOUT_MS};
use crate::env::EnvValue;
use codemode::kind::ConnectorSettings;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Every key an MCP connector's table may have: the shared ones and its own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpConfigFile {
    #[serde(flatten)]
    settings: ConnectorSettings,
    #[serde(default)]
    command: Option<Command>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, EnvValue>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    bearer_token_env: Option<String>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    startup_timeout_ms: Option<u64>,
    #[serde(default)]
    rename: BTreeMap<String, String>,
    #[serde(default)]
    allow_code_tools: bool,
    /// The old nested shape, refused with what to write instead.
    #[serde(default)]
    transport: Option<IgnoredAny>,
}

/// `command`: the program as a string, or the old list of program and arguments.
enum Command {
    Program(String),
    OldList(Vec<String>),
}

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CommandVisitor;
        impl<'de> Visitor<'de> for CommandVisitor {
            type Value = Command;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the program to start, as a string (its arguments go in `args`)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Command, E> {
                Ok(Command::Program(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Command, A::Error> {
                let mut list = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    list.push(item);
                }
                Ok(Command::OldList(list))
            }
        }
        d.deserialize_any(CommandVisitor)
    }
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

impl TryFrom<McpConfigFile> for McpConfig {
    type Error = String;

    fn try_from(f: McpConfigFile) -> Result<McpConfig, String> {
        if f.transport.is_some() {
            return Err("`transport` is the old nested shape: write its keys in the connector's own table: `command` (a string), `args`, `env`, `cwd` to start a process, or `url`, `headers`, `bearer_token_env` for Streamable HTTP".into());
        }
        let transport = match (f.command, f.url) {
            (Some(Command::OldList(list)), _) => {
                let (program, args) = list
                    .split_first()
                    .map_or(("PROGRAM", &[][..]), |(p, a)| (p.as_str(), a));
                let given = if f.args.is_empty() {
                    ""
                } else {
                    " (and `args` is given as well)"
                };
                return Err(format!(
                    "`command` is the program alone, a string, and its arguments go in `args`{given}: write command = {program:?} and args = {}",
                    toml_list(args)
                ));
            }
            (Some(_), Some(_)) | (None, None) => {
                return Err("give exactly one of `command` (a program started over stdio) or `url` (a server over Streamable HTTP)".into());
            }
            (Some(Command::Program(command)), None) => {
                if command.trim().is_empty() {
                    return Err("`command` must name a program, e.g. command = \"npx\"".into());
                }
                if !f.headers.is_empty() || f.bearer_token_env.is_some() {
                    return Err("`headers` and `bearer_token_env` are for `url` (Streamable HTTP); a process started with `command` gets its settings through `env`".into());
                }
                McpTransport::Stdio {
                    command,
                    args: f.args,
                    env: f.env,
                    cwd: f.cwd,
                }
            }
            (None, Some(url)) => {
                if !f.args.is_empty() || !f.env.is_empty() || f.cwd.is_some() {
                    return Err("`args`, `env` and `cwd` are for `command` (a process); a server at `url` takes `headers` and `bearer_token_env`".into());
                }
                McpTransport::Http {
                    url,
                    headers: f.headers,
                    bearer_token_env: f.bearer_token_env,
                }
            }
        };
        Ok(McpConfig {
            settings: f.settings,
            transport,
            instructions: f.instructions,
            startup_timeout_ms: f.startup_timeout_ms.unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS),
            rename: f.rename,
            allow_code_tools: f.allow_code_tools,
        })
    }
}
