//! Why an OpenAPI connector could not start.

use thiserror::Error;

/// A start-up failure, naming the connector and the cause.
#[derive(Debug, Error)]
#[error("OpenAPI connector `{connector}`: {cause}")]
pub struct OpenApiError {
    /// The connector's configured name.
    pub connector: String,
    /// What went wrong.
    pub cause: Cause,
}

impl OpenApiError {
    /// An error for `connector`.
    pub fn new(connector: impl Into<String>, cause: Cause) -> Self {
        OpenApiError {
            connector: connector.into(),
            cause,
        }
    }
}

/// What went wrong while loading a document or building the connector.
#[derive(Debug, Error)]
pub enum Cause {
    /// The document file could not be read.
    #[error("cannot read spec file {path}: {message}")]
    Read {
        /// The path as configured.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// The document URL could not be fetched.
    #[error("cannot fetch spec {url}: {message}")]
    Fetch {
        /// The URL as configured.
        url: String,
        /// What failed.
        message: String,
    },
    /// Neither JSON nor YAML.
    #[error("spec is neither JSON ({json}) nor YAML ({yaml})")]
    Syntax {
        /// The JSON parser's complaint.
        json: String,
        /// The YAML parser's complaint.
        yaml: String,
    },
    /// Parsed, but not an OpenAPI 3.x document.
    #[error("not an OpenAPI 3.0/3.1 document: {0}")]
    NotOpenApi(String),
    /// A `$ref` that cannot be followed.
    #[error("{0}")]
    Ref(#[from] RefError),
    /// An operation the connector cannot map.
    #[error("{0}")]
    Invalid(String),
    /// Two operations, or an operation and a built-in method, with one method name.
    #[error("{0}")]
    Name(#[from] codemode::discovery::DiscoveryError),
    /// A revert rule that does not fit the operations.
    #[error("{0}")]
    Revert(#[from] codemode::policy::RevertConfigError),
    /// No base URL in the document or the configuration.
    #[error("no base URL: the spec has no usable `servers` entry; set `base_url`")]
    NoBaseUrl,
    /// A base URL that does not parse.
    #[error("base URL {url:?} is not a valid absolute URL: {message}")]
    BadBaseUrl {
        /// The URL.
        url: String,
        /// The parser's complaint.
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
    /// A per-method setting that cannot be applied.
    #[error("{0}")]
    Override(#[from] codemode::policy::OverrideError),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// A `$ref` that cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RefError {
    /// Points outside the document.
    #[error("$ref {0:?} points outside the document; only local refs (`#/…`) are supported")]
    External(String),
    /// Points at nothing.
    #[error("$ref {0:?} points at nothing in the document")]
    Dangling(String),
    /// A chain of refs that comes back to itself without reaching a value.
    #[error("$ref loop: {}", .0.join(" -> "))]
    Loop(Vec<String>),
}
