//! The HTTP control API (JSON) and the MCP endpoint at `/mcp`.

use crate::mcp;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use codemode::{Runtime, RuntimeError, SaveSnippet};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The runtime.
    pub runtime: Runtime,
    /// Connectors that failed to start, for `/healthz`.
    pub failed: Arc<Vec<(String, String)>>,
    /// The bearer token, when one is required.
    pub token: Option<Arc<String>>,
    /// How a person approves, for paused MCP results.
    pub approve_hint: Arc<String>,
}

/// A JSON error with a status code.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        let status = match &e {
            RuntimeError::UnknownExecution(_) => StatusCode::NOT_FOUND,
            RuntimeError::WrongStatus { .. } | RuntimeError::AlreadyHandled { .. } => {
                StatusCode::CONFLICT
            }
            RuntimeError::MissingConnectors { .. } => StatusCode::CONFLICT,
            RuntimeError::Snippet(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match &e {
            // Approving what another node or tab already finished: say so plainly.
            RuntimeError::WrongStatus {
                status, operation, ..
            } if status.is_terminal() && *operation == "approve" => {
                format!("{e} (already handled)")
            }
            _ => e.to_string(),
        };
        ApiError(status, message)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError(status, r.body_text())
    }
}

/// A JSON body whose rejections are JSON errors.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(v) = Json::<T>::from_request(req, state).await?;
        Ok(Body(v))
    }
}

type ApiResult = Result<Json<Value>, ApiError>;

fn to_json<T: serde::Serialize>(v: T) -> ApiResult {
    serde_json::to_value(v)
        .map(Json)
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

fn not_found(what: &str) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, what.to_string())
}

/// Builds the router: API, MCP and health. Cancelling `shutdown` ends the MCP sessions.
pub fn router(
    state: AppState,
    max_body: usize,
    loopback: bool,
    shutdown: tokio_util::sync::CancellationToken,
) -> Router {
    let api = Router::new()
        .route("/api/run", post(run))
        .route("/api/pending", get(pending))
        .route("/api/executions", get(executions))
        .route(
            "/api/executions/{id}",
            get(execution).delete(delete_execution),
        )
        .route("/api/executions/{id}/approve", post(approve))
        .route("/api/executions/{id}/reject", post(reject))
        .route("/api/executions/{id}/rollback", post(rollback))
        .route("/api/prune", post(prune))
        .route("/api/expire", post(expire))
        .route("/api/snippets", get(snippets).post(save_snippet))
        .route("/api/snippets/{name}", delete(delete_snippet))
        .route("/api/search", get(search))
        .route("/api/describe", get(describe))
        .route("/api/tool", get(tool))
        .route("/api/connectors", get(connectors))
        .route("/api/types", get(types))
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such route".into()) })
        .layer(middleware::from_fn_with_state(max_body, read_whole_body))
        .nest_service("/mcp", mcp::http_service(state.clone(), loopback, shutdown))
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(DefaultBodyLimit::max(max_body));
    Router::new()
        .route("/healthz", get(healthz))
        .merge(api)
        .merge(crate::console::router())
        .with_state(state)
}

/// Reads the request body to its end (at most `max_body` bytes) before any API route runs.
/// A route that ignores its body (approve, rollback, the deletes) would otherwise answer with
/// the body still unread, and the server then closes the keep-alive connection.
async fn read_whole_body(State(max_body): State<usize>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, max_body).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Err(_) => ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {max_body} bytes (limits.max_body_bytes), or it was cut off"),
        )
        .into_response(),
    }
}

async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let ok = given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes()));
        if !ok {
            let mut resp = ApiError(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token (Authorization: Bearer ...)".into(),
            )
            .into_response();
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().unwrap());
            return resp;
        }
    }
    next.run(req).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn healthz(State(s): State<AppState>) -> Json<Value> {
    let failed: Vec<Value> = s
        .failed
        .iter()
        .map(|(name, error)| json!({"connector": name, "error": error}))
        .collect();
    Json(json!({
        "ok": true,
        "connectors": s.runtime.connector_names(),
        "failed": failed,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunBody {
    code: String,
}

async fn run(State(s): State<AppState>, Body(b): Body<RunBody>) -> ApiResult {
    to_json(s.runtime.call(&b.code).await?)
}

async fn pending(State(s): State<AppState>) -> ApiResult {
    to_json(s.runtime.pending(None).await?)
}

#[derive(Deserialize)]
struct Limit {
    limit: Option<usize>,
}

async fn executions(State(s): State<AppState>, Query(q): Query<Limit>) -> ApiResult {
    to_json(s.runtime.executions(q.limit).await?)
}

async fn execution(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    match s.runtime.execution(&id).await? {
        Some(e) => to_json(e),
        None => Err(RuntimeError::UnknownExecution(id).into()),
    }
}

async fn delete_execution(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    if s.runtime.delete_execution(&id).await? {
        Ok(Json(json!({"deleted": id})))
    } else {
        Err(RuntimeError::UnknownExecution(id).into())
    }
}

async fn approve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    to_json(s.runtime.approve(&id).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RejectBody {
    seq: u64,
}

async fn reject(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(b): Body<RejectBody>,
) -> ApiResult {
    if s.runtime.execution(&id).await?.is_none() {
        return Err(RuntimeError::UnknownExecution(id).into());
    }
    if s.runtime.reject(&id, b.seq).await? {
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

async fn rollback(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    to_json(s.runtime.rollback(&id).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PruneBody {
    keep: usize,
}

async fn prune(State(s): State<AppState>, Body(b): Body<PruneBody>) -> ApiResult {
    let deleted = s.runtime.prune_executions(b.keep).await?;
    Ok(Json(json!({"deleted": deleted})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpireBody {
    max_age_ms: u64,
}

async fn expire(State(s): State<AppState>, Body(b): Body<ExpireBody>) -> ApiResult {
    let ids = s
        .runtime
        .expire_paused(Duration::from_millis(b.max_age_ms))
        .await?;
    Ok(Json(json!({"expired": ids})))
}

async fn snippets(State(s): State<AppState>) -> ApiResult {
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

async fn save_snippet(State(s): State<AppState>, Body(b): Body<SnippetBody>) -> ApiResult {
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

async fn delete_snippet(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult {
    if s.runtime.delete_snippet(&name).await? {
        Ok(Json(json!({"deleted": name})))
    } else {
        Err(not_found(&format!("no snippet named {name:?}")))
    }
}

#[derive(Deserialize)]
struct SearchQuery {
    q: String,
}

async fn search(State(s): State<AppState>, Query(q): Query<SearchQuery>) -> ApiResult {
    to_json(s.runtime.search(&q.q).await?)
}

#[derive(Deserialize)]
struct DescribeQuery {
    target: String,
}

async fn describe(State(s): State<AppState>, Query(q): Query<DescribeQuery>) -> ApiResult {
    match s.runtime.describe(&q.target).await? {
        Ok(d) => to_json(d),
        Err(message) => Err(not_found(&message)),
    }
}

async fn tool(State(s): State<AppState>) -> ApiResult {
    to_json(s.runtime.tool())
}

/// Every connector with its instructions, hint and methods (approval, read-only, revert), and
/// the ones that failed to start.
async fn connectors(State(s): State<AppState>) -> Json<Value> {
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
    let failed: Vec<Value> = s
        .failed
        .iter()
        .map(|(name, error)| json!({"connector": name, "error": error}))
        .collect();
    Json(json!({"connectors": connectors, "failed": failed}))
}

async fn types(State(s): State<AppState>) -> Json<Value> {
    Json(json!({"types": s.runtime.types()}))
}
