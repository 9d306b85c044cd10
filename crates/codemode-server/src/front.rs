//! What every request passes first, in one middleware: its trace span, the loopback rule of a
//! server without tokens ([`crate::auth::Access`]), the cross-site and host checks
//! ([`crate::guard`]), and JSON for the errors routes leave as text
//! ([`crate::reply::json_errors`]). One layer instead of three: each `from_fn` layer boxes
//! the request's future and clones the service under it.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::state::SharedState;
use crate::{auth, guard, reply, telemetry};

/// Middleware: runs the request in its span (while telemetry is on), refuses a peer the
/// server does not serve without a token, refuses what [`guard::refusal`] refuses, and
/// answers errors in JSON.
pub async fn front(State(state): State<SharedState>, req: Request, next: Next) -> Response {
    match telemetry::http_span(&req) {
        None => checked(&state, req, next).await,
        Some(span) => {
            let response = checked(&state, req, next).instrument(span.clone()).await;
            span.record("http.response.status_code", response.status().as_u16());
            response
        }
    }
}

async fn checked(state: &SharedState, req: Request, next: Next) -> Response {
    let o = &state.options;
    let refused = auth::peer_refusal(o.access, !o.tokens.is_empty(), &req)
        .or_else(|| guard::refusal(state, &req));
    if let Some(refused) = refused {
        return refused.into_response();
    }
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let response = next.run(req).await;
    reply::json_errors(&method, &uri, response).await
}
