//! What goes wrong with the demo's tables: opening them (for a person) and using them (for
//! the model's code).

use codemode::ToolError;

/// The demo's tables could not be opened: where, and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DemoError(pub(crate) String);

/// A failed statement on the demo's tables, as the code sees it.
pub(crate) fn tool_error(e: impl std::fmt::Display) -> ToolError {
    ToolError(format!("tasks database: {e}"))
}
