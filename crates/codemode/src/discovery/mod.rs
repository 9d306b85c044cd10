//! Discovery: TypeScript from JSON Schema, search, describe, and the tool the model sees.

mod error;
mod names;

pub use error::DiscoveryError;
pub use names::{
    check_connector_name, is_reserved_word, is_standard_global, is_valid_identifier,
    sanitize_tool_name, sanitize_tool_names, try_sanitize_tool_name, RESERVED_WORDS,
    STANDARD_GLOBALS,
};
