//! The one error type of discovery.

use thiserror::Error;

/// What can go wrong when naming tools or building a [`super::Catalog`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DiscoveryError {
    /// A name that is empty or made only of characters an identifier cannot hold.
    #[error("tool name {original:?} has no character usable in an identifier (letters, digits, `_`, `$`)")]
    EmptyName {
        /// The name as given.
        original: String,
    },
    /// Two different names that sanitise to the same identifier.
    #[error("tool names {first:?} and {second:?} both become `{sanitized}`; rename one of them")]
    NameCollision {
        /// The first name as given.
        first: String,
        /// The second name as given.
        second: String,
        /// The identifier both turn into.
        sanitized: String,
    },
    /// A connector name the sandbox cannot use as a global.
    #[error("connector name {name:?} is not usable: {reason}")]
    InvalidConnectorName {
        /// The name as given.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// Two connectors with the same name.
    #[error("two connectors are named {name:?}")]
    DuplicateConnector {
        /// The shared name.
        name: String,
    },
    /// A tool name that is not a valid identifier.
    #[error("tool {connector}.{tool:?} is not a valid identifier; pass it through sanitize_tool_name first")]
    InvalidToolName {
        /// Its connector.
        connector: String,
        /// The tool name as given.
        tool: String,
    },
    /// Two tools of one connector with the same name.
    #[error("connector {connector:?} has two tools named {tool:?}")]
    DuplicateTool {
        /// Its connector.
        connector: String,
        /// The shared name.
        tool: String,
    },
}
