//! Saved snippets: list, save, delete.

use super::{not_found, to_json, ApiResult, Body};
use crate::state::SharedState;
use axum::extract::{Path, State};
use axum::routing::{delete, get};
use axum::{Json, Router};
use codemode::SaveSnippet;
use serde::Deserialize;
use serde_json::{json, Value};

/// The routes of this group.
pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/api/snippets", get(snippets).post(save_snippet))
        .route("/api/snippets/{name}", delete(delete_snippet))
}

async fn snippets(State(s): State<SharedState>) -> ApiResult {
    to_json(s.runtime.snippets().await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SnippetBody {
    name: String,
    #[serde(alias = "from", alias = "execution_id")]
    execution_id: String,
    description: Option<String>,
    input_schema: Option<Value>,
    #[serde(default)]
    force: bool,
    #[serde(default)]
    replace: bool,
}

async fn save_snippet(State(s): State<SharedState>, Body(b): Body<SnippetBody>) -> ApiResult {
    let snippet = s
        .runtime
        .save_snippet(
            &b.name,
            SaveSnippet {
                execution_id: b.execution_id,
                description: b.description,
                input_schema: b.input_schema,
                force: b.force,
                replace: b.replace,
            },
        )
        .await?;
    to_json(snippet)
}

async fn delete_snippet(State(s): State<SharedState>, Path(name): Path<String>) -> ApiResult {
    if s.runtime.delete_snippet(&name).await? {
        Ok(Json(json!({"deleted": name})))
    } else {
        Err(not_found(&format!("no snippet named {name:?}")))
    }
}
