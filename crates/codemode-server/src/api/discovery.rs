//! What the sandbox offers: search, describe, the tool, the connectors and every declaration.

use super::{failed_json, not_found, to_json, ApiResult};
use crate::state::SharedState;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

/// The routes of this group.
pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/api/search", get(search))
        .route("/api/describe", get(describe))
        .route("/api/tool", get(tool))
        .route("/api/connectors", get(connectors))
        .route("/api/types", get(types))
}

#[derive(Deserialize)]
struct SearchQuery {
    q: String,
}

async fn search(State(s): State<SharedState>, Query(q): Query<SearchQuery>) -> ApiResult {
    to_json(s.runtime.search(&q.q).await?)
}

#[derive(Deserialize)]
struct DescribeQuery {
    target: String,
}

async fn describe(State(s): State<SharedState>, Query(q): Query<DescribeQuery>) -> ApiResult {
    match s.runtime.describe(&q.target).await? {
        Ok(d) => to_json(d),
        Err(message) => Err(not_found(&message)),
    }
}

async fn tool(State(s): State<SharedState>) -> ApiResult {
    to_json(s.tool())
}

/// Every connector with its instructions, hint and methods (approval, read-only, revert), and
/// the ones that failed to start.
async fn connectors(State(s): State<SharedState>) -> Json<Value> {
    let connectors: Vec<Value> = s
        .runtime
        .connectors()
        .iter()
        .map(|c| {
            let methods: Vec<Value> = c
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "requiresApproval": t.requires_approval,
                        "readOnly": t.read_only,
                        "hasRevert": t.has_revert,
                    })
                })
                .collect();
            json!({
                "name": c.name,
                "instructions": c.instructions,
                "hint": c.hint,
                "methods": methods,
            })
        })
        .collect();
    Json(json!({"connectors": connectors, "failed": failed_json(&s)}))
}

async fn types(State(s): State<SharedState>) -> Json<Value> {
    Json(json!({"types": s.runtime.types()}))
}
