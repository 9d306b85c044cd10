//! `GET /healthz`: the connectors that run, the ones that failed to start, and the ones that
//! started with warnings. It answers 200 whenever the server serves: what failed stays local.

use super::failed_json;
use crate::state::SharedState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

/// `{ok, degraded, connectors, failed, warnings}`; needs no token. `ok` is false when a
/// configured connector failed to start; `degraded` also when one started with warnings.
pub async fn healthz(State(s): State<SharedState>) -> Json<Value> {
    let failed = failed_json(&s);
    let warnings: Vec<Value> = s
        .options
        .connector_warnings
        .iter()
        .map(|(name, warning)| json!({"connector": name, "warning": warning}))
        .collect();
    Json(json!({
        "ok": failed.is_empty(),
        "degraded": !failed.is_empty() || !warnings.is_empty(),
        "connectors": s.runtime.connector_names(),
        "failed": failed,
        "warnings": warnings,
    }))
}
