//! `GET /api/audit?since=T[&until=T][&format=json|jsonl|csv]`: the audit export of the store.

use super::{ApiError, ApiResult};
use crate::audit::{self, AuditRange};
use crate::state::SharedState;
use crate::when::{parse_instant, ACCEPTED};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

/// The routes of this group.
pub fn routes() -> Router<SharedState> {
    Router::new().route("/api/audit", get(export))
}

#[derive(Deserialize)]
struct AuditQuery {
    /// The first instant included: RFC 3339 or epoch milliseconds.
    since: Option<String>,
    /// The first instant excluded (default: now).
    until: Option<String>,
    /// `json` (an array, the default), `jsonl` (one record a line) or `csv`.
    format: Option<String>,
}

/// The window of a query, or a 400 naming the accepted forms.
pub fn range(since: Option<&str>, until: Option<&str>) -> Result<AuditRange, ApiError> {
    let bad = |e: crate::when::InstantError| ApiError::new(StatusCode::BAD_REQUEST, e.to_string());
    let Some(since) = since else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("give since=T: {ACCEPTED}"),
        ));
    };
    Ok(AuditRange {
        since: parse_instant("since", since).map_err(bad)?,
        until: until
            .map(|u| parse_instant("until", u))
            .transpose()
            .map_err(bad)?,
    })
}

async fn export(State(s): State<SharedState>, Query(q): Query<AuditQuery>) -> Response {
    let answer = async {
        let range = range(q.since.as_deref(), q.until.as_deref())?;
        let records = audit::collect(&s.runtime, range).await?;
        Ok::<_, ApiError>(match q.format.as_deref().unwrap_or("json") {
            "json" => json(&records)?.into_response(),
            "jsonl" => text("application/x-ndjson", audit::to_jsonl(&records)),
            "csv" => text("text/csv; charset=utf-8", audit::to_csv(&records)),
            other => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("format {other:?}: expected json, jsonl or csv"),
                ))
            }
        })
    };
    answer.await.unwrap_or_else(IntoResponse::into_response)
}

impl From<audit::AuditError> for ApiError {
    fn from(e: audit::AuditError) -> Self {
        match e {
            audit::AuditError::Runtime(e) => e.into(),
            too_wide => ApiError::new(StatusCode::BAD_REQUEST, too_wide.to_string()),
        }
    }
}

fn json(records: &[audit::AuditRecord]) -> ApiResult {
    super::to_json(records)
}

fn text(content_type: &'static str, body: String) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}
