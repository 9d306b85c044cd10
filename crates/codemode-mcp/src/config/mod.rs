//! What `codemode.toml` says about one MCP connector.

mod file;

use crate::env::EnvValue;
use codemode::kind::ConnectorSettings;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Default per-call timeout.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;
/// Default time allowed for the server to start and finish the MCP handshake.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

/// One MCP server as a connector. Written as a table whose transport keys sit beside the
/// others: `command` (a string), `args`, `env`, `cwd` to start a process, or `url`, `headers`,
/// `bearer_token_env` for Streamable HTTP (see the crate README).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "file::McpConfigFile")]
pub struct McpConfig {
    /// The keys every kind shares: the global name, `hint`, `max_in_flight`, `timeout_ms`
    /// (default [`DEFAULT_CALL_TIMEOUT_MS`]), and the policy: `approval` (tools annotated
    /// `readOnlyHint: true` are read-only), `reverts`, and `tools` (per-tool `description`,
    /// `replay`, `requires_approval`, by the tool's method or server name).
    pub settings: ConnectorSettings,
    /// How to reach the server.
    pub transport: McpTransport,
    /// Guidance for the model; the server's own instructions when absent.
    pub instructions: Option<String>,
    /// Time allowed for start-up and handshake, in milliseconds.
    pub startup_timeout_ms: u64,
    /// Method names chosen for tools, by the tool's name on the server (`"old-name" = "new_name"`).
    pub rename: BTreeMap<String, String>,
    /// Let in tools that take code to run (named like a code runner, or whose input has a
    /// string `code` or `script`): left out by default, since code run there escapes the log
    /// and the approvals, and a Code Mode server wrapped as a connector would run itself.
    pub allow_code_tools: bool,
}

impl McpConfig {
    /// A configuration with defaults for everything but the name and the transport.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpConfig {
            settings: ConnectorSettings::new(name),
            transport,
            instructions: None,
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            rename: BTreeMap::new(),
            allow_code_tools: false,
        }
    }

    /// The global name in the sandbox.
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// How long one call may take: `timeout_ms`, else [`DEFAULT_CALL_TIMEOUT_MS`].
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.settings.timeout_ms.unwrap_or(DEFAULT_CALL_TIMEOUT_MS))
    }
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpTransport {
    /// Spawn a process and speak MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// The server's variables, each a literal or a secret reference; besides these it gets
        /// only PATH, HOME, LANG, TERM, USER, LOGNAME, SHELL and TMPDIR from codemode's own.
        #[serde(default)]
        env: BTreeMap<String, EnvValue>,
        /// Working directory.
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Fixed, non-secret headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Environment variable holding a bearer token, sent as `Authorization: Bearer …`.
        #[serde(default)]
        bearer_token_env: Option<String>,
    },
}

impl McpTransport {
    /// A stdio transport for `command` with `args`.
    pub fn stdio<S: Into<String>>(
        command: impl Into<String>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    /// A stdio transport for a command line, split into words as a POSIX shell would (so
    /// quoted arguments keep their spaces).
    pub fn stdio_command_line(line: &str) -> Result<Self, CommandLineError> {
        let words = shell_words::split(line).map_err(|_| CommandLineError::UnclosedQuote)?;
        match words.split_first() {
            Some((program, args)) => Ok(McpTransport::stdio(program, args)),
            None => Err(CommandLineError::Empty),
        }
    }

    /// A Streamable HTTP transport for `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpTransport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
            bearer_token_env: None,
        }
    }

    /// For messages: the command line or the URL.
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// Why a command line is not a command.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommandLineError {
    /// A quote is opened and never closed.
    #[error("the command is not valid shell words (close every quote)")]
    UnclosedQuote,
    /// There is no word at all.
    #[error("give the command that starts the server")]
    Empty,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Result<(String, Vec<String>), CommandLineError> {
        match McpTransport::stdio_command_line(line)? {
            McpTransport::Stdio { command, args, .. } => Ok((command, args)),
            McpTransport::Http { .. } => unreachable!("a command line is stdio"),
        }
    }

    #[test]
    fn a_command_line_splits_as_a_shell_would() {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            words("npx -y srv").unwrap(),
            ("npx".into(), own(&["-y", "srv"]))
        );
        assert_eq!(
            words(r#"node "/a folder/s.js" --name 'x y' a\ b"#).unwrap(),
            (
                "node".into(),
                own(&["/a folder/s.js", "--name", "x y", "a b"])
            )
        );
        assert_eq!(words("node 'open"), Err(CommandLineError::UnclosedQuote));
        assert_eq!(words("   "), Err(CommandLineError::Empty));
    }
}
