//! The extension point for hosts that send requests themselves (OAuth refresh, request
//! signing, a proxy): a [`RequestSender`] given to [`OpenApiBuilder::sender`](crate::OpenApiBuilder::sender)
//! is used for every call instead of the built-in client.

use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// A request ready to go: the connector has checked it stays below the base URL and added the
/// query, the fixed headers, the configured credentials and the idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingRequest {
    /// Upper-case method.
    pub method: String,
    /// The absolute URL, query included.
    pub url: String,
    /// Headers, in order (names as given).
    pub headers: Vec<(String, String)>,
    /// The body, if any (its media type is in `headers` as `content-type`).
    pub body: Option<Vec<u8>>,
    /// The connector's per-call timeout; the connector also stops waiting after it.
    pub timeout: Duration,
}

impl OutgoingRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncomingResponse {
    /// The HTTP status code.
    pub status: u16,
    /// Response headers, in order.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

/// Why a request could not be sent; the message reaches the model's code (secrets scrubbed),
/// so it should say what failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct SendError(pub String);

/// Sends requests for an OpenAPI connector in place of the built-in HTTP client.
#[async_trait]
pub trait RequestSender: Send + Sync {
    /// Sends one request and returns the response, whatever its status.
    async fn send(&self, request: OutgoingRequest) -> Result<IncomingResponse, SendError>;
}

/// A sender held by the connector (`Debug` without showing the host's type).
#[derive(Clone)]
pub(crate) struct Sender(pub Arc<dyn RequestSender>);

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestSender")
    }
}
