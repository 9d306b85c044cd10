//! The event streams as routes: `GET /api/events` and `GET /api/executions/{id}/events`
//! (server-sent events; see [`crate::events`]), at most `limits.max_event_streams` open at
//! once (past it 503) and `limits.max_event_streams_per_client` for one token or address
//! (past it 429), both with `Retry-After`. The MCP endpoint's `GET /mcp` streams count
//! against the same limits (`crate::mcp::streams`).

use super::ApiError;
use crate::auth::Principal;
use crate::events::{Filter, StreamRefused, STREAM_RETRY_AFTER_SECONDS};
use crate::state::SharedState;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;
use std::net::SocketAddr;
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

/// Who a stream counts against: the token's name, or the address when no token is needed.
pub(crate) fn client_of(parts: &Parts) -> String {
    match parts.extensions.get::<Principal>() {
        Some(p) if p.name != Principal::local().name => format!("token {}", p.name),
        _ => match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(addr)) => format!("address {}", addr.ip()),
            None => "local".to_string(),
        },
    }
}

/// The refusal of a stream past its limits: 503 (all) or 429 (this client), `Retry-After`.
pub(crate) fn refused_stream(why: StreamRefused) -> Response {
    let status = match why {
        StreamRefused::Full(_) => StatusCode::SERVICE_UNAVAILABLE,
        StreamRefused::ClientFull(_) => StatusCode::TOO_MANY_REQUESTS,
    };
    let mut resp = ApiError::new(status, why.to_string()).into_response();
    resp.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(STREAM_RETRY_AFTER_SECONDS),
    );
    resp
}

fn respond(s: &SharedState, filter: Filter, parts: &Parts) -> Result<Response, ApiError> {
    let after = last_event_id(&parts.headers)?;
    let place = match s.events.open(&client_of(parts)) {
        Ok(place) => place,
        Err(why) => return Ok(refused_stream(why)),
    };
    // A shutdown ends the stream, so open streams do not hold it up.
    let stream = s
        .events
        .stream(filter, after, place)
        .take_until(s.options.shutdown.clone().cancelled_owned());
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // Proxies must pass events on as they come.
    resp.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}

/// `GET /api/events`: every execution's status changes and new pending actions.
async fn all(State(s): State<SharedState>, parts: Parts) -> Result<Response, ApiError> {
    respond(&s, Filter::Executions, &parts)
}

/// `GET /api/executions/{id}/events`: one execution's calls, console lines and status.
async fn one(
    State(s): State<SharedState>,
    Path(id): Path<String>,
    parts: Parts,
) -> Result<Response, ApiError> {
    if s.runtime.execution(&id).await?.is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no execution {id}"),
        ));
    }
    respond(&s, Filter::Execution(id), &parts)
}
