//! `GET /mcp` (the MCP endpoint's server-sent events) counts against the event-stream limits
//! as `/api/events` does: `limits.max_event_streams` in all (past it 503) and
//! `limits.max_event_streams_per_client` for one token or address (past it 429), both with
//! `Retry-After`. An open stream holds its place until its body is dropped (the client left,
//! the session ended or the server shuts down); any other answer gives it back at once.

use crate::api::{client_of, refused_stream};
use crate::state::SharedState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

/// Whether `response` is a stream of server-sent events.
fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// Runs a `GET` only with a stream place free, and keeps the place for as long as the
/// stream it answers with is open; other methods pass through.
pub async fn count_streams(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let place = match state.events.open(&client_of(&parts)) {
        Ok(place) => place,
        Err(why) => return refused_stream(why),
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    if !is_event_stream(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let held = body.into_data_stream().map(move |chunk| {
        let _open = &place;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(held))
}
