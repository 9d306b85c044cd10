//! The JSON error every route answers with: `{"error": "..."}` and its status.

use axum::extract::rejection::JsonRejection;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use codemode::RuntimeError;
use serde_json::json;

/// A JSON error with a status code: `{"error": "..."}`.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError(status, message.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        let status = match &e {
            RuntimeError::UnknownExecution(_) => StatusCode::NOT_FOUND,
            RuntimeError::WrongStatus { .. } | RuntimeError::AlreadyHandled { .. } => {
                StatusCode::CONFLICT
            }
            RuntimeError::MissingConnectors { .. } | RuntimeError::NotPending { .. } => {
                StatusCode::CONFLICT
            }
            RuntimeError::Snippet(_)
            | RuntimeError::InvalidDecision { .. }
            | RuntimeError::InvalidExecutionId(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match &e {
            // Approving what another node or tab already finished: say so plainly.
            RuntimeError::WrongStatus {
                status, operation, ..
            } if status.is_terminal() && *operation == "approve" => {
                format!("{e} (already handled)")
            }
            _ => e.to_string(),
        };
        ApiError(status, message)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError(status, r.body_text())
    }
}

/// Turns `response`, the answer to `method uri`, into `{"error": "..."}` with the same
/// status when it is a 4xx/5xx that is not JSON (an unknown route, a method a route does not
/// take, a query string or path segment that does not decode), saying which request was
/// refused. The console's pages and `/mcp` keep their own answers.
pub async fn json_errors(method: &Method, uri: &Uri, response: Response) -> Response {
    let path = uri.path();
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json
        || !(status.is_client_error() || status.is_server_error())
        || path.starts_with("/mcp")
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let message = match status {
        StatusCode::NOT_FOUND if text.is_empty() => format!("no route {method} {path}"),
        StatusCode::METHOD_NOT_ALLOWED => format!("{path} does not take {method}"),
        _ if text.is_empty() => format!("{method} {path}: {status}"),
        _ => format!("{method} {path}: {text}"),
    };
    let mut answer = ApiError(status, message).into_response();
    if let Some(allow) = parts.headers.get(axum::http::header::ALLOW) {
        answer
            .headers_mut()
            .insert(axum::http::header::ALLOW, allow.clone());
    }
    answer
}
