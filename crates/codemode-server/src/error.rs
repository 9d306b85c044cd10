//! What can go wrong serving.

/// An error of a server front, saying which one and why.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The MCP session on stdin/stdout could not start or ended with an error.
    #[error("MCP over stdio failed: {0}")]
    Stdio(String),
    /// The OpenAPI document could not be read back from its connector.
    #[error("cannot read the OpenAPI document: {0}")]
    Spec(String),
}
