//! The workspaces' files, read only: which workspaces hold files, a directory's entries, and
//! one file's content. Writing is the sandbox's (`state.writeFile`), where it is logged.

use super::{not_found, to_json, ApiError, ApiResult};
use crate::state::SharedState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use codemode_workspace::{Workspace, WorkspaceError, WorkspaceOptions};
use serde::Deserialize;
use serde_json::json;

/// The routes of this group.
pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/api/workspaces", get(workspaces))
        .route("/api/workspace/{name}/files", get(files))
        .route("/api/workspace/{name}/file", get(file))
}

fn refused(e: WorkspaceError) -> ApiError {
    let status = match &e {
        WorkspaceError::InvalidPath { .. } | WorkspaceError::InvalidName(_) => {
            StatusCode::BAD_REQUEST
        }
        WorkspaceError::NotFound { .. } => StatusCode::NOT_FOUND,
        WorkspaceError::IsDirectory(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError(status, e.to_string())
}

/// The configured workspace's store, or a 404 saying the workspace is off.
fn configured(s: &SharedState) -> Result<&Workspace, ApiError> {
    s.options.workspace.as_ref().ok_or_else(|| {
        not_found("the workspace is off (`[workspace] enabled = false` in codemode.toml)")
    })
}

/// The workspace `name` on the configured workspace's store, with its limits.
fn named(s: &SharedState, name: String) -> Result<Workspace, ApiError> {
    let ws = configured(s)?;
    let options = WorkspaceOptions {
        workspace: name,
        ..ws.options().clone()
    };
    Workspace::new(ws.store().clone(), options).map_err(refused)
}

async fn workspaces(State(s): State<SharedState>) -> ApiResult {
    let Some(ws) = s.options.workspace.as_ref() else {
        return Ok(Json(json!({"enabled": false, "workspaces": []})));
    };
    let list = codemode_workspace::workspaces(ws.store().as_ref())
        .await
        .map_err(|e| refused(e.into()))?;
    let items: Vec<_> = list
        .into_iter()
        .map(|w| json!({"name": w.name, "files": w.files, "bytes": w.bytes}))
        .collect();
    Ok(Json(json!({
        "enabled": true,
        "configured": ws.name(),
        "workspaces": items,
    })))
}

#[derive(Deserialize)]
struct DirQuery {
    dir: Option<String>,
}

async fn files(
    State(s): State<SharedState>,
    Path(name): Path<String>,
    Query(q): Query<DirQuery>,
) -> ApiResult {
    let ws = named(&s, name)?;
    let dir = q.dir.unwrap_or_else(|| "/".to_string());
    let dir = ws.normalize(&dir).map_err(refused)?;
    let listing = ws.list(&dir).await.map_err(refused)?;
    let mut v = serde_json::to_value(listing)
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    v["workspace"] = json!(ws.name());
    v["dir"] = json!(dir);
    Ok(Json(v))
}

#[derive(Deserialize)]
struct PathQuery {
    path: Option<String>,
}

async fn file(
    State(s): State<SharedState>,
    Path(name): Path<String>,
    Query(q): Query<PathQuery>,
) -> ApiResult {
    let ws = named(&s, name)?;
    let Some(raw) = q.path else {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "missing `path`: ask for a file as ?path=/notes/a.txt".into(),
        ));
    };
    let path = ws.normalize(&raw).map_err(refused)?;
    match ws.read(&path).await.map_err(refused)? {
        Some(f) => to_json(json!({
            "workspace": ws.name(),
            "path": f.info.path,
            "size": f.info.size,
            "updatedAt": f.info.updated_at,
            "content": f.content,
        })),
        None => match ws.stat(&path).await.map_err(refused)? {
            Some(_) => Err(refused(WorkspaceError::IsDirectory(path))),
            None => Err(not_found(&format!(
                "no file {path} in workspace {:?}; GET /api/workspace/{}/files lists what is there",
                ws.name(),
                ws.name()
            ))),
        },
    }
}
