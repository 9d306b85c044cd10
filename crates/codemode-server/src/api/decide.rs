//! Run with a wait, approve with edited arguments or a standing scope, and cancel.

use super::{to_json, ApiError, ApiResult, Body};
use crate::admission::RunError;
use crate::auth::{caller, Principal};
use crate::state::SharedState;
use crate::wait::{self, Waited};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use codemode::{Approval, ApprovalScope, Outcome};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The body of `POST /api/run`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    code: String,
}

/// The query of `POST /api/run`.
#[derive(Deserialize)]
pub struct RunQuery {
    /// How long to wait for a decision when the run pauses, in milliseconds (at most
    /// `approvals.wait_ms`; none: answer at once).
    wait_ms: Option<u64>,
}

/// `POST /api/run[?wait_ms=N]`: runs code; with `wait_ms`, a pause waits up to N ms
/// (clamped to `approvals.wait_ms`) for a decision made elsewhere and answers the outcome.
pub async fn run(
    State(s): State<SharedState>,
    Query(q): Query<RunQuery>,
    by: Option<Extension<Principal>>,
    Body(b): Body<RunBody>,
) -> Result<Json<Value>, RunError> {
    let runtime = s.runtime.clone();
    let outcome = s
        .admission
        .run(async move { runtime.call(&b.code).await })
        .await??;
    let limit = Duration::from_millis(q.wait_ms.unwrap_or(0)).min(s.options.wait);
    let Outcome::Paused { execution_id, .. } = &outcome else {
        return Ok(to_json(outcome)?);
    };
    if limit.is_zero() {
        return Ok(to_json(outcome)?);
    }
    let by = caller(by).name.into();
    // The caller going away drops this future; nothing is cancelled on its behalf.
    let never = CancellationToken::new();
    let waited = wait::follow(&s.runtime, execution_id, limit, &never, &by, |_| {}).await?;
    let (Waited::Done(e) | Waited::Abandoned(e)) = waited;
    Ok(Json(wait::state_json(&e)))
}

/// The optional body of `POST /api/executions/{id}/approve`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    /// Arguments that replace the model's for the one pending action.
    args: Option<Value>,
    /// `action` (default) or `execution`: also approve later calls of the same methods.
    scope: Option<ApprovalScope>,
    /// Further `connector.method`s a standing approval covers.
    #[serde(default)]
    methods: Vec<String>,
    /// The pending actions approved (default: all).
    seqs: Option<Vec<u64>>,
}

/// `POST /api/executions/{id}/approve` with an optional body `{args, scope, methods, seqs}`;
/// refused options (400) change nothing.
pub async fn approve(
    State(s): State<SharedState>,
    Path(id): Path<String>,
    by: Option<Extension<Principal>>,
    body: Bytes,
) -> Result<Json<Value>, RunError> {
    let b: ApproveBody = if body.iter().all(u8::is_ascii_whitespace) {
        ApproveBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("the approve body must be {{\"args\"?, \"scope\"?: \"action\" | \"execution\", \"methods\"?, \"seqs\"?}}: {e}"),
            )
        })?
    };
    let by = caller(by).name;
    let mut approval = Approval::by(by.as_str()).scope(b.scope.unwrap_or_default());
    approval.methods = b.methods;
    approval.args = b.args;
    approval.seqs = b.seqs;
    tracing::info!(execution = %id, by = %by, scope = ?approval.scope, edited = approval.args.is_some(), "approve");
    let runtime = s.runtime.clone();
    let outcome = s
        .admission
        .run(async move { runtime.approve_with(&id, approval).await })
        .await??;
    Ok(to_json(outcome)?)
}

/// `POST /api/executions/{id}/cancel`: stops a running execution (409 when it is not running).
pub async fn cancel(
    State(s): State<SharedState>,
    Path(id): Path<String>,
    by: Option<Extension<Principal>>,
) -> ApiResult {
    let by = caller(by).name;
    tracing::info!(execution = %id, by = %by, "cancel");
    let e = s.runtime.cancel(&id, by.as_str().into()).await?;
    Ok(Json(json!({"executionId": e.id, "status": e.status})))
}
