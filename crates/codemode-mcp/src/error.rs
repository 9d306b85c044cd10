//! Why an MCP connector could not start.

use thiserror::Error;

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
    /// A configured header that is not a valid HTTP header.
    #[error("header {0:?} is not a valid HTTP header name or value")]
    BadHeader(String),
    /// The connector name or a tool name is not usable.
    #[error("{0}")]
    Name(#[from] codemode::discovery::DiscoveryError),
    /// A revert rule that does not fit the tools.
    #[error("{0}")]
    Revert(#[from] codemode::policy::RevertConfigError),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}
