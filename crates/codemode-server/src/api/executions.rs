//! Runs and their decisions: run, pending, list, show, delete, approve, reject, rollback,
//! prune and expire.

use super::{to_json, ApiError, ApiResult, Body};
use crate::admission::RunError;
use crate::auth::{caller, Principal};
use crate::decisions;
use crate::state::SharedState;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::{Json, Router};
use codemode::RuntimeError;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// The routes of this group.
pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/api/run", post(super::decide::run))
        .route("/api/pending", get(pending))
        .route("/api/executions", get(executions))
        .route(
            "/api/executions/{id}",
            get(execution).delete(delete_execution),
        )
        .route("/api/executions/{id}/approve", post(super::decide::approve))
        .route("/api/executions/{id}/cancel", post(super::decide::cancel))
        .route("/api/executions/{id}/reject", post(reject))
        .route("/api/executions/{id}/rollback", post(rollback))
        .route("/api/executions/{id}/resume", post(resume))
        .route("/api/prune", post(prune))
        .route("/api/expire", post(expire))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PendingQuery {
    /// Only this execution's pending actions.
    execution_id: Option<String>,
    /// A page of at most this many actions (at most [`MAX_PENDING_PAGE`]); a full page's
    /// answer names the next one in its `Link` header; 0, negative or not a number is a 400.
    limit: Option<String>,
    /// The page starts after this action, `EXECUTION_ID:SEQ` (as the `Link` header says).
    after: Option<String>,
}

/// The largest page `GET /api/pending` answers, and the page size when only `after` is given.
const MAX_PENDING_PAGE: usize = 1_000;

/// Pending actions: all of them (or one execution's), or a page when `limit` or `after` is
/// given, read a page at a time from the store.
async fn pending(
    State(s): State<SharedState>,
    Query(q): Query<PendingQuery>,
) -> Result<Response, ApiError> {
    let only = q.execution_id.as_deref().filter(|id| !id.is_empty());
    let after = q.after.as_deref().filter(|a| !a.is_empty());
    if only.is_some() || (q.limit.is_none() && after.is_none()) {
        return to_json(s.runtime.pending(only).await?).map(IntoResponse::into_response);
    }
    let limit = page_size(
        q.limit.as_deref(),
        MAX_PENDING_PAGE,
        MAX_PENDING_PAGE,
        "after=EXECUTION_ID:SEQ",
    )?;
    let after = after.map(parse_after).transpose()?;
    let page = s
        .runtime
        .pending_page(after.as_ref().map(|(id, seq)| (id.as_str(), *seq)), limit)
        .await?;
    let next = match page.last() {
        Some(last) if page.len() == limit => Some(format!(
            "<?limit={limit}&after={}:{}>; rel=\"next\"",
            percent_encode(&last.execution_id),
            last.seq
        )),
        _ => None,
    };
    let body = to_json(page)?;
    Ok(match next.and_then(|n| HeaderValue::from_str(&n).ok()) {
        Some(link) => ([(header::LINK, link)], body).into_response(),
        None => body.into_response(),
    })
}

/// `EXECUTION_ID:SEQ`, split at the last `:`.
fn parse_after(after: &str) -> Result<(String, u64), ApiError> {
    after
        .rsplit_once(':')
        .and_then(|(id, seq)| Some((id.to_string(), seq.parse().ok()?)))
        .filter(|(id, _)| !id.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("after must be EXECUTION_ID:SEQ, not {after:?}"),
            )
        })
}

/// A query value with everything but unreserved characters percent-encoded.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The default age `POST /api/expire` rejects paused runs past: one day.
const DEFAULT_EXPIRE_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// An optional JSON body: none (or only whitespace) is `T::default()`.
fn optional_body<T: serde::de::DeserializeOwned + Default>(
    body: &Bytes,
    shape: &str,
) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the body must be {shape} or nothing: {e}"),
        )
    })
}

/// The page `GET /api/executions` answers without `limit`.
pub const DEFAULT_EXECUTIONS_PAGE: usize = 50;
/// The largest page `GET /api/executions` answers; a larger `limit` is cut to it.
pub const MAX_EXECUTIONS_PAGE: usize = 500;

#[derive(Deserialize)]
struct ListQuery {
    /// A page of at most this many (default [`DEFAULT_EXECUTIONS_PAGE`], cut to
    /// [`MAX_EXECUTIONS_PAGE`]); 0, negative or not a number is a 400.
    limit: Option<String>,
    /// The page starts after this execution (as the `Link` header says).
    before: Option<String>,
    /// Only executions of this status.
    status: Option<String>,
}

/// The page size a `limit` asks for (`default` without one, cut to `max`), or a 400 saying
/// what is accepted and how to page on (`cursor`: the query parameter the `Link` header gives).
fn page_size(
    limit: Option<&str>,
    default: usize,
    max: usize,
    cursor: &str,
) -> Result<usize, ApiError> {
    let Some(text) = limit else {
        return Ok(default);
    };
    let bad = || {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "limit must be a whole number from 1 to {max} (larger ones are cut to {max}), not {text:?}; page on with {cursor} from the Link header"
            ),
        )
    };
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    // All digits: only overflow fails, and an overflowing number is a large page.
    let n = digits.parse::<u128>().unwrap_or(u128::MAX);
    if n == 0 {
        return Err(bad());
    }
    Ok(usize::try_from(n).map_or(max, |n| n.min(max)))
}

/// `GET /api/executions[?limit=N][&before=ID][&status=S]`: a page of execution summaries
/// newest first (no logs: `GET /api/executions/{id}` has one with its log); a full page
/// names the next one in its `Link` header.
async fn executions(
    State(s): State<SharedState>,
    Query(q): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let limit = page_size(
        q.limit.as_deref(),
        DEFAULT_EXECUTIONS_PAGE,
        MAX_EXECUTIONS_PAGE,
        "before=ID",
    )?;
    let status = match q.status.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(text) => Some(codemode::ExecutionStatus::parse(text).ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("status {text:?} is not one: running, paused, completed, error, rejected, rolled_back, cancelled"),
            )
        })?),
    };
    let before = q.before.as_deref().filter(|b| !b.is_empty());
    let page = s.runtime.execution_summaries(status, before, limit).await?;
    let next = match page.last() {
        Some(last) if page.len() == limit => {
            let status = status.map_or(String::new(), |s| format!("&status={s}"));
            Some(format!(
                "<?limit={limit}&before={}{status}>; rel=\"next\"",
                percent_encode(&last.id)
            ))
        }
        _ => None,
    };
    let body = to_json(page)?;
    Ok(match next.and_then(|n| HeaderValue::from_str(&n).ok()) {
        Some(link) => ([(header::LINK, link)], body).into_response(),
        None => body.into_response(),
    })
}

async fn execution(State(s): State<SharedState>, Path(id): Path<String>) -> ApiResult {
    match s.runtime.execution(&id).await? {
        Some(e) => to_json(e),
        None => Err(RuntimeError::UnknownExecution(id).into()),
    }
}

async fn delete_execution(State(s): State<SharedState>, Path(id): Path<String>) -> ApiResult {
    if s.runtime.delete_execution(&id).await? {
        Ok(Json(json!({"deleted": id})))
    } else {
        Err(RuntimeError::UnknownExecution(id).into())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RejectBody {
    seq: u64,
}

async fn reject(
    State(s): State<SharedState>,
    Path(id): Path<String>,
    by: Option<Extension<Principal>>,
    Body(b): Body<RejectBody>,
) -> ApiResult {
    if s.runtime.execution(&id).await?.is_none() {
        return Err(RuntimeError::UnknownExecution(id).into());
    }
    let by = caller(by).name.into();
    if decisions::reject(&s.runtime, &id, b.seq, by).await? {
        Ok(Json(
            json!({"executionId": id, "rejected": b.seq, "status": "rejected"}),
        ))
    } else {
        Err(ApiError(
            StatusCode::CONFLICT,
            format!(
                "execution {id} has no pending action {} (already handled, or not paused)",
                b.seq
            ),
        ))
    }
}

async fn rollback(
    State(s): State<SharedState>,
    Path(id): Path<String>,
    by: Option<Extension<Principal>>,
) -> ApiResult {
    let by = caller(by).name.into();
    to_json(decisions::rollback(&s.runtime, &id, by).await?)
}

/// `POST /api/executions/{id}/resume`: takes over a run whose node stopped; 409 while its
/// lease is live (saying how long to wait) or when it is not running.
async fn resume(
    State(s): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, RunError> {
    let runtime = s.runtime.clone();
    let resumed = s
        .admission
        .run(async move { decisions::resume(&runtime, &id).await })
        .await?;
    match resumed {
        Ok(outcome) => Ok(to_json(outcome)?),
        Err(e) => Err(match decisions::lease_refusal(&s.runtime, &e) {
            Some(message) => ApiError::new(StatusCode::CONFLICT, message),
            None => e.into(),
        }
        .into()),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PruneBody {
    keep: Option<usize>,
}

/// `POST /api/prune [{keep}]`: without `keep`, keeps the retention limit (`max_executions`).
async fn prune(State(s): State<SharedState>, body: Bytes) -> ApiResult {
    let b: PruneBody = optional_body(&body, "{\"keep\"?: N}")?;
    let keep = b.keep.unwrap_or_else(|| s.runtime.max_executions());
    let deleted = s.runtime.prune_executions(keep).await?;
    Ok(Json(json!({"deleted": deleted, "kept": keep})))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ExpireBody {
    max_age_ms: Option<u64>,
}

/// `POST /api/expire [{max_age_ms}]`: without `max_age_ms`, rejects runs paused over a day.
async fn expire(State(s): State<SharedState>, body: Bytes) -> ApiResult {
    let b: ExpireBody = optional_body(&body, "{\"max_age_ms\"?: N}")?;
    let age = b
        .max_age_ms
        .map_or(DEFAULT_EXPIRE_AGE, Duration::from_millis);
    let ids = s.runtime.expire_paused(age).await?;
    Ok(Json(json!({"expired": ids})))
}
