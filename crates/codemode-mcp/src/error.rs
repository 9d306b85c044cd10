//! Why an MCP connector could not start.

use thiserror::Error;

/// Why a code tool is left out.
pub const RECURSION: &str = "it takes code to run (named like a code runner, or its input has a string `code` or `script`), and exposing it would let code run code, past the log and the approvals (a Code Mode server wrapped as a connector would run itself); connect to the servers behind it instead";

/// How to let a connector's code tools in, said after [`RECURSION`].
pub(crate) fn allow_hint(connector: &str) -> String {
    format!("; if this server is safe to run code in, set allow_code_tools = true in [connectors.{connector}]")
}

/// A start-up failure, naming the connector and the cause.
#[derive(Debug, Error)]
#[error("MCP connector `{connector}`: {cause}")]
pub struct ConnectError {
    /// The connector's configured name.
    pub connector: String,
    /// What went wrong.
    pub cause: Cause,
}

impl ConnectError {
    /// An error for `connector`.
    pub fn new(connector: impl Into<String>, cause: Cause) -> Self {
        ConnectError {
            connector: connector.into(),
            cause,
        }
    }
}

/// What went wrong while starting or listing a server.
#[derive(Debug, Error)]
pub enum Cause {
    /// The command could not be started.
    #[error("cannot start `{command}`: {message}")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating system's complaint.
        message: String,
    },
    /// The server did not complete the MCP handshake.
    #[error("`{target}` did not complete the MCP handshake: {message}{stderr}")]
    Handshake {
        /// The command line or URL.
        target: String,
        /// What failed.
        message: String,
        /// The last lines the server wrote to stderr, if any, already formatted.
        stderr: String,
    },
    /// Listing the tools failed.
    #[error("listing the tools of `{target}` failed: {message}")]
    ListTools {
        /// The command line or URL.
        target: String,
        /// What failed.
        message: String,
    },
    /// A secret's environment variable is not set.
    #[error("environment variable {var} ({what}) is not set")]
    MissingEnv {
        /// The variable name.
        var: String,
        /// What it should hold.
        what: String,
    },
    /// A configured environment variable name (or value) a process cannot be given.
    #[error("environment variable {0:?} cannot be passed to the server: a name must be non-empty without `=`, and neither may contain a NUL byte")]
    BadEnvName(String),
    /// A `rename` entry that cannot be used.
    #[error("rename: {0}")]
    Rename(String),
    /// A configured header that is not a valid HTTP header.
    #[error("header {0:?} is not a valid HTTP header name or value")]
    BadHeader(String),
    /// The connector name or a tool name is not usable.
    #[error("{0}")]
    Name(#[from] codemode::discovery::DiscoveryError),
    /// A revert rule that does not fit the tools.
    #[error("{0}")]
    Revert(#[from] codemode::policy::RevertConfigError),
    /// A per-tool setting that cannot be applied.
    #[error("{0}")]
    Override(#[from] codemode::policy::OverrideError),
    /// Every tool of the server takes code to run.
    #[error("every tool it lists ({tools}) is left out: {why}{hint}", why = RECURSION, hint = allow_hint(connector))]
    Recursive {
        /// The tools, quoted and joined.
        tools: String,
        /// The connector's configured name.
        connector: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}
