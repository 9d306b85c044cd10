//! OpenAPI 3.0 and 3.1 APIs as Code Mode connectors: one typed method per operation.
//!
//! The document is read as plain JSON (or YAML) and walked here, with a JSON-pointer `$ref`
//! resolver, so that specs a typed model would refuse still load. Credentials come from
//! environment variables and never leave the host: they are added to requests here and
//! scrubbed from results and errors. GET, HEAD and OPTIONS run without approval; every other
//! operation, and the low-level `request`, needs approval unless the configuration says not.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod auth;
mod config;
mod connector;
mod error;
mod http;
mod kind;
mod load;
mod methods;
mod operations;
mod refs;
mod request;
mod sender;
mod stored;

pub use auth::REDACTED;
pub use config::{
    ApiKeyLocation, AuthConfig, OpenApiConfig, DEFAULT_MAX_ERROR_BODY, DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT_MS,
};
pub use connector::{OpenApiBuilder, OpenApiConnector, REQUEST_METHOD, SPEC_METHOD};
pub use error::{Cause, OpenApiError, RefError};
pub use kind::OpenApiKind;
pub use sender::{IncomingResponse, OutgoingRequest, RequestSender, SendError};
