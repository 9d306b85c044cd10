//! The connector kinds `codemode.toml` knows: a kind's crate implements
//! [`ConnectorKind`](codemode::kind::ConnectorKind), and one line here registers it.

use codemode::kind::{ConnectorKinds, KindError};

/// The kinds of the connector crates this server is built with: `mcp`, `openapi` and
/// `workspace`. A host adds its own with [`ConnectorKinds::with`]; the `codemode` binary adds
/// the demo's (`demo`), whose crate needs a store of its own.
pub fn builtin_kinds() -> Result<ConnectorKinds, KindError> {
    ConnectorKinds::new()
        .with(codemode_mcp::McpKind)?
        .with(codemode_openapi::OpenApiKind)?
        .with(codemode_workspace::WorkspaceKind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_kinds_are_registered_once_each() {
        let kinds = builtin_kinds().unwrap();
        assert_eq!(kinds.names(), ["mcp", "openapi", "workspace"]);
        assert_eq!(
            kinds.with(codemode_mcp::McpKind).unwrap_err(),
            KindError::DuplicateKind { kind: "mcp".into() }
        );
    }
}
