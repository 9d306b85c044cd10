//! The `codemode` tool call that waits: a run that pauses (where the client cannot be asked)
//! waits in the call for a decision made elsewhere, with progress notifications, and
//! `{ "executionId": "..." }` picks up an execution instead of running code again.

use super::live::Progress;
use super::{outcome_result, CodemodeMcp};
use crate::auth::Principal;
use crate::wait::{self, Waited};
use codemode::{Actor, Execution, ExecutionStatus, Runtime, RuntimeError};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The tool's input schema: `code` (JavaScript to run) or `executionId` (an execution to pick
/// up), exactly one of them.
pub fn input_schema(mut schema: JsonObject) -> JsonObject {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(
            "executionId".into(),
            json!({
                "type": "string",
                "description": "Instead of code: the id of an execution this tool returned (paused or still running). Returns its outcome, waiting for a pending approval; nothing runs twice."
            }),
        );
    }
    schema.remove("required");
    schema
}

/// A tool error result with `message`.
fn tool_error(message: String) -> CallToolResult {
    let mut r = CallToolResult::structured_error(json!({ "error": message }));
    r.content = vec![ContentBlock::text(message)];
    r.is_error = Some(true);
    r
}

/// Who makes the decisions of this request: the token's name, or `local`.
fn actor_of(context: &RequestContext<RoleServer>) -> Actor {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Principal>())
        .map_or_else(Actor::local, |p| Actor::from(p.name.clone()))
}

/// The request's W3C `traceparent`: in its `_meta`, else in the HTTP request's headers.
fn traceparent_of(context: &RequestContext<RoleServer>) -> Option<String> {
    if let Some(Value::String(tp)) = context.meta.get("traceparent") {
        return Some(tp.clone());
    }
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get("traceparent"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl CodemodeMcp {
    /// Answers one `codemode` tool call: runs `code`, or picks up `executionId`.
    pub async fn answer(
        &self,
        arguments: Option<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let span = crate::telemetry::request_span("mcp", traceparent_of(&context).as_deref());
        self.answer_in(arguments, context).instrument(span).await
    }

    async fn answer_in(
        &self,
        arguments: Option<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let args = arguments.unwrap_or_default();
        let code = args.get("code");
        let id = args.get("executionId");
        match (code, id) {
            (Some(Value::String(code)), None) => self.run_and_wait(code, &context).await,
            (None, Some(Value::String(id))) => self.pick_up(id, &context).await,
            (Some(_), Some(_)) => Ok(tool_error(
                "give either `code` or `executionId`, not both: `executionId` picks up a run without running anything again".into(),
            )),
            _ => Ok(tool_error(
                "`code` must be a string of JavaScript (or give `executionId`, a string, to pick up an earlier run)".into(),
            )),
        }
    }

    /// Whether a pause is put to this client as an elicitation (then the call does not wait).
    fn elicits(&self, peer: &Peer<RoleServer>) -> bool {
        self.state.options.elicitation
            && peer
                .supported_elicitation_modes()
                .contains(&rmcp::service::ElicitationMode::Form)
    }

    /// Runs code; a pause nobody was asked about in the call waits for a decision.
    async fn run_and_wait(
        &self,
        code: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let by = actor_of(context);
        let id = Runtime::new_execution_id();
        let progress = Progress::new(context.peer.clone(), context.meta.get_progress_token());
        // What the execution does, as it does it, for as long as this call lasts.
        let live = progress.follow(&self.state.runtime, &id);
        let watcher = CancelWatcher::start(self.state.runtime.clone(), &id, &context.ct, &by);
        let result = self.run_as(&id, code, Some(&context.peer)).await;
        drop(watcher);
        let result = result?;
        let paused = result
            .structured_content
            .as_ref()
            .filter(|v| v["status"] == "paused")
            .and_then(|v| v["executionId"].as_str())
            .map(str::to_string);
        let answer = match paused {
            Some(id) if !self.elicits(&context.peer) => {
                self.pick_up_with(&id, context, &progress).await
            }
            _ => Ok(result),
        };
        live.finish(&progress).await;
        answer
    }

    /// Returns where execution `id` stands, waiting while it is paused or running.
    async fn pick_up(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let progress = Progress::new(context.peer.clone(), context.meta.get_progress_token());
        let live = progress.follow(&self.state.runtime, id);
        let answer = self.pick_up_with(id, context, &progress).await;
        live.finish(&progress).await;
        answer
    }

    /// [`Self::pick_up`], reporting on `progress`.
    async fn pick_up_with(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        progress: &Progress,
    ) -> Result<CallToolResult, McpError> {
        let rt = &self.state.runtime;
        let by = actor_of(context);
        let limit = self.state.options.wait;
        let report = |e: &Execution| progress.send(wait::waiting_for(e));
        let waited = wait::follow(rt, id, limit, &context.ct, &by, report).await;
        let e = match waited {
            Ok(Waited::Done(e) | Waited::Abandoned(e)) => e,
            Err(RuntimeError::UnknownExecution(_)) => {
                return Ok(tool_error(format!(
                    "no execution {id:?}: pass an executionId this tool returned (or run the code instead)"
                )))
            }
            Err(e) => return Err(McpError::internal_error(e.to_string(), None)),
        };
        Ok(self.execution_result(&e).await)
    }

    /// An execution's state as a tool result; a result is cut to the model's budget as the
    /// first call's is, and kept whole in the workspace when cut.
    async fn execution_result(&self, e: &Execution) -> CallToolResult {
        if let Some(outcome) = wait::outcome_of(e) {
            let workspace = self.state.options.workspace.as_ref();
            let (outcome, _) = crate::saved::truncate_and_save(
                outcome,
                self.state.options.result_budget,
                workspace,
            )
            .await;
            return outcome_result(&outcome, &self.state.options);
        }
        let value = wait::state_json(e);
        let mut text = value.to_string();
        let mut r = CallToolResult::structured(value);
        if e.status == ExecutionStatus::Running {
            text.push_str(&format!(
                "\n\nThe run is still going. Call this tool again with {{\"executionId\": \"{}\"}} to wait for its result; do not resend the code.",
                e.id
            ));
        } else {
            r.is_error = Some(true);
        }
        r.content = vec![ContentBlock::text(text)];
        r
    }
}

/// While a tool call runs code, cancels that code's execution (`id`, chosen before it
/// started) if the client cancels the request (`notifications/cancelled`). Stops when dropped.
struct CancelWatcher(tokio::task::JoinHandle<()>);

impl CancelWatcher {
    fn start(rt: Arc<Runtime>, id: &str, ct: &CancellationToken, by: &Actor) -> CancelWatcher {
        let (id, ct, by) = (id.to_string(), ct.clone(), by.clone());
        CancelWatcher(tokio::spawn(async move {
            ct.cancelled().await;
            // The execution may not be in the store yet when the cancel arrives at once.
            for _ in 0..100 {
                match rt.cancel(&id, by.clone()).await {
                    Err(codemode::RuntimeError::UnknownExecution(_)) => {
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                    Err(err) => {
                        tracing::debug!(execution = %id, error = %err, "cancel after the client cancelled: nothing to stop");
                        return;
                    }
                    Ok(_) => {
                        tracing::info!(execution = %id, by = %by, "cancelled (the client cancelled the tool call)");
                        return;
                    }
                }
            }
        }))
    }
}

impl Drop for CancelWatcher {
    fn drop(&mut self) {
        self.0.abort();
    }
}
