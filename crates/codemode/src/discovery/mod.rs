//! Discovery: TypeScript from JSON Schema, search, describe, and the tool the model sees.
//!
//! Build a [`Catalog`] once from the connectors; it validates their names, indexes their
//! methods for [`Catalog::search`], generates declarations on demand for
//! [`Catalog::describe`] and [`Catalog::types`], and writes the tool the model is handed
//! ([`Catalog::tool_definition`]).

mod catalog;
mod closest;
mod describe;
mod doc_comment;
mod error;
mod intent;
mod listing;
mod method_words;
mod names;
mod query;
mod refs;
mod schema_words;
mod search;
mod synonyms;
mod tokens;
mod tool;
mod typescript;

pub use catalog::{Catalog, ConnectorInfo};
pub use closest::{clip_name, closest, not_a_method, MAX_NAME_CHARS};
pub use describe::{DescribeKind, DescribeOptions, DescribeOutput, SDK_DECLARATIONS};
pub use doc_comment::escape_comment;
pub use error::DiscoveryError;
pub use names::{
    check_connector_name, is_reserved_word, is_standard_global, is_valid_identifier,
    sanitize_tool_name, sanitize_tool_names, try_sanitize_tool_name, RESERVED_WORDS,
    STANDARD_GLOBALS,
};
pub use query::{MAX_QUERY_CHARS, MAX_QUERY_WORDS};
pub use refs::{bundle_refs, resolve_ref};
pub use search::{SearchKind, SearchOutput, SearchResult, MAX_SEARCH_RESULTS};
pub use tool::{
    code_input_schema, estimated_tokens, ToolDefinition, DEFAULT_DESCRIPTION_TOKENS, TOOL_NAME,
};
pub use typescript::{
    property_key, schema_to_ts, type_name_from, TypeScriptBuilder, MAX_NAMED_TYPES,
    MAX_SCHEMA_DEPTH,
};
