//! The HTTP control API (JSON) under `/api`: one module per route group, and the error and
//! body types they share.

mod audit;
mod decide;
mod discovery;
mod events;
mod executions;
mod health;
mod snippets;
mod workspace;

use crate::state::SharedState;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

pub(crate) use events::{client_of, refused_stream};
pub use health::healthz;

/// Every `/api` route, with bodies read whole (at most `max_body` bytes) before they run.
/// Crate-private: a host gets them through [`crate::routes`], behind the token check and the
/// loopback rule.
pub(crate) fn routes(max_body: usize) -> Router<SharedState> {
    Router::new()
        .merge(executions::routes())
        .merge(audit::routes())
        .merge(events::routes())
        .merge(snippets::routes())
        .merge(discovery::routes())
        .merge(workspace::routes())
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such route") })
        .layer(middleware::from_fn_with_state(max_body, read_whole_body))
}

pub use crate::reply::ApiError;

/// A JSON body whose rejections are JSON errors.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(v) = Json::<T>::from_request(req, state).await?;
        Ok(Body(v))
    }
}

/// What a JSON route answers.
pub type ApiResult = Result<Json<Value>, ApiError>;

/// Serialises an answer.
pub fn to_json<T: serde::Serialize>(v: T) -> ApiResult {
    serde_json::to_value(v)
        .map(Json)
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// A 404 with `what` as its message.
pub fn not_found(what: &str) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, what.to_string())
}

/// The connectors that failed to start, as `[{connector, error}]`.
pub fn failed_json(s: &SharedState) -> Vec<Value> {
    s.options
        .failed_connectors
        .iter()
        .map(|(name, error)| json!({"connector": name, "error": error}))
        .collect()
}

/// Reads the request body to its end (at most `max_body` bytes) before any API route runs.
/// A route that ignores its body (approve, rollback, the deletes) would otherwise answer with
/// the body still unread, and the server then closes the keep-alive connection.
async fn read_whole_body(State(max_body): State<usize>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, max_body).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Err(_) => ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {max_body} bytes (limits.max_body_bytes), or it was cut off"),
        )
        .into_response(),
    }
}
