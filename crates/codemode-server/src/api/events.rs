//! The event streams as routes: `GET /api/events` and `GET /api/executions/{id}/events`
//! (server-sent events; see [`crate::events`]).

use super::ApiError;
use crate::events::Filter;
use crate::state::SharedState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;
use std::time::Duration;

/// How often an idle stream sends a comment, so proxies and clients see it alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The routes of this group.
pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/api/events", get(all))
        .route("/api/executions/{id}/events", get(one))
}

/// The `Last-Event-ID` a reconnecting client sends; a value that is not a number is a 400.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("Last-Event-ID must be the id of an event this server sent (a whole number), not {text:?}"),
        )
    })
}

fn respond(s: &SharedState, filter: Filter, headers: &HeaderMap) -> Result<Response, ApiError> {
    let after = last_event_id(headers)?;
    // A shutdown ends the stream, so open streams do not hold it up.
    let stream = s
        .events
        .stream(filter, after)
        .take_until(s.options.shutdown.clone().cancelled_owned());
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // Proxies must pass events on as they come.
    resp.headers_mut().insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    Ok(resp)
}

/// `GET /api/events`: every execution's status changes and new pending actions.
async fn all(State(s): State<SharedState>, headers: HeaderMap) -> Result<Response, ApiError> {
    respond(&s, Filter::Executions, &headers)
}

/// `GET /api/executions/{id}/events`: one execution's calls, console lines and status.
async fn one(
    State(s): State<SharedState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if s.runtime.execution(&id).await?.is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no execution {id}"),
        ));
    }
    respond(&s, Filter::Execution(id), &headers)
}
