//! The MCP server: one tool, `codemode`, over Streamable HTTP (`/mcp`) or stdio.

use crate::error::ServerError;
use crate::state::SharedState;
use codemode::{Outcome, Runtime};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

mod live;
mod paused;
mod streams;
mod wait;

pub use streams::count_streams;

/// The MCP handler over the shared state.
#[derive(Clone)]
pub struct CodemodeMcp {
    state: SharedState,
}

impl CodemodeMcp {
    /// A handler over the state: made only by [`http_service`] and [`serve_stdio`], so that a
    /// host reaches it over HTTP only through [`crate::routes`], behind the loopback rule.
    pub(crate) fn new(state: SharedState) -> Self {
        CodemodeMcp { state }
    }

    fn tool(&self) -> Tool {
        let def = self.state.tool();
        let schema = match def.input_schema {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        Tool::new(
            def.name,
            def.description,
            Arc::new(wait::input_schema(schema)),
        )
    }

    /// Runs code and shapes the outcome as a tool result. Where the client supports
    /// elicitation, each pause is put to the user: accept approves and continues in the same
    /// call, decline rejects, and anything else leaves it paused for approval elsewhere.
    pub async fn run(
        &self,
        code: &str,
        peer: Option<&Peer<RoleServer>>,
    ) -> Result<CallToolResult, McpError> {
        self.run_as(&Runtime::new_execution_id(), code, peer).await
    }

    /// [`Self::run`] as the execution `id`.
    async fn run_as(
        &self,
        id: &str,
        code: &str,
        peer: Option<&Peer<RoleServer>>,
    ) -> Result<CallToolResult, McpError> {
        let internal = |e: codemode::RuntimeError| McpError::internal_error(e.to_string(), None);
        let rt = &self.state.runtime;
        let mut outcome = rt.call_with_id(id, code).await.map_err(internal)?;
        // Elicitation approves only where it is trusted (`approvals.elicitation`); otherwise a
        // pause goes back to the model, and a person decides through the API, console or CLI.
        let can_ask = self.state.options.elicitation
            && peer.is_some_and(|p| {
                p.supported_elicitation_modes()
                    .contains(&rmcp::service::ElicitationMode::Form)
            });
        while let (
            Outcome::Paused {
                execution_id,
                pending,
            },
            true,
            Some(peer),
        ) = (&outcome, can_ask, peer)
        {
            let Some(first) = pending.first() else { break };
            // One question for the whole batch: accepting approves every action listed.
            let message = batch_question(pending);
            let request = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: ElicitationSchema::new(BTreeMap::new()),
            };
            let answer = match peer.create_elicitation(request).await {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "elicitation failed; leaving the execution paused");
                    break;
                }
            };
            match answer.action {
                ElicitationAction::Accept => match crate::decisions::approve(
                    rt,
                    execution_id,
                    codemode::Actor::elicitation(),
                )
                .await
                {
                    Ok(next) => outcome = next,
                    Err(e) => {
                        tracing::warn!(error = %e, "approval after elicitation failed");
                        break;
                    }
                },
                ElicitationAction::Decline => {
                    let id = execution_id.clone();
                    let seq = first.seq;
                    let by = codemode::Actor::elicitation();
                    if crate::decisions::reject(rt, &id, seq, by)
                        .await
                        .map_err(internal)?
                    {
                        let what = match pending.len() {
                            1 => format!("{}.{}", first.connector, first.method),
                            n => format!(
                                "{n} actions ({}.{} and the others)",
                                first.connector, first.method
                            ),
                        };
                        let v = json!({
                            "status": "rejected",
                            "executionId": id,
                            "error": format!("the user rejected {what}; nothing after it ran"),
                        });
                        let mut r = CallToolResult::structured(v);
                        r.is_error = Some(true);
                        return Ok(r);
                    }
                    break;
                }
                _ => break,
            }
        }
        // What the model receives is bounded; a cut result is kept whole in the workspace.
        let workspace = self.state.options.workspace.as_ref();
        let (outcome, _) =
            crate::saved::truncate_and_save(outcome, self.state.options.result_budget, workspace)
                .await;
        Ok(outcome_result(&outcome, &self.state.options))
    }
}

/// The most actions one elicitation lists by name; the rest are counted.
const MAX_ASKED_ACTIONS: usize = 20;
/// The most characters of one action's arguments an elicitation shows.
const MAX_ASKED_ARGS_CHARS: usize = 2_000;

/// The one question put to the user for a pause: every action waiting in it, with its
/// arguments (each cut to [`MAX_ASKED_ARGS_CHARS`]; past [`MAX_ASKED_ACTIONS`], counted).
fn batch_question(pending: &[codemode::PendingAction]) -> String {
    let args = |a: &codemode::PendingAction| {
        let text = serde_json::to_string_pretty(&a.args).unwrap_or_default();
        match text.char_indices().nth(MAX_ASKED_ARGS_CHARS) {
            None => text,
            Some((at, _)) => format!(
                "{}… (cut; {} characters in all)",
                &text[..at],
                text.chars().count()
            ),
        }
    };
    if let [one] = pending {
        return format!(
            "The code wants to run {}.{} with {}. Approve this action?",
            one.connector,
            one.method,
            args(one)
        );
    }
    let mut text = format!(
        "The code wants to run {} actions at once. Approve all of them?",
        pending.len()
    );
    for (i, a) in pending.iter().take(MAX_ASKED_ACTIONS).enumerate() {
        text.push_str(&format!(
            "\n\n{}. {}.{} with {}",
            i + 1,
            a.connector,
            a.method,
            args(a)
        ));
    }
    if pending.len() > MAX_ASKED_ACTIONS {
        text.push_str(&format!(
            "\n\n… and {} more (the console lists them all).",
            pending.len() - MAX_ASKED_ACTIONS
        ));
    }
    text
}

/// The outcome as `structuredContent` and as text. A pause is rendered within the result
/// budget (see `mcp/paused.rs`): its text says what waits and who must approve it and how,
/// with commands that work as printed (`options.approve_hint`, and the API when listening);
/// its structured content carries only the ids.
pub fn outcome_result(outcome: &Outcome, options: &crate::ServerOptions) -> CallToolResult {
    if let Outcome::Paused {
        execution_id,
        pending,
    } = outcome
    {
        let cmd = match options.approve_hint.trim() {
            "" => "codemode",
            hint => hint,
        };
        let seq = pending.first().map_or(0, |p| p.seq);
        let api = options.listen.map_or(String::new(), |a| {
            format!(", or `POST http://{a}/api/executions/{execution_id}/approve`")
        });
        let hint = format!(
            "Tell the user; they approve with `{cmd} approve {execution_id}`{api} (or reject with `{cmd} reject {execution_id} {seq}`). Do not resend the code: approval resumes it where it stopped. To wait for the decision and get the result, call this tool again with {{\"executionId\": \"{execution_id}\"}}."
        );
        let budget = options.result_budget.budget_chars();
        return paused::paused_result(execution_id, pending, &hint, options.max_batch, budget);
    }
    let value = serde_json::to_value(outcome).unwrap_or(Value::Null);
    let mut result = CallToolResult::structured(value.clone());
    if let Outcome::Error { .. } = outcome {
        result.is_error = Some(true);
    }
    result.content = vec![ContentBlock::text(value.to_string())];
    result
}

impl ServerHandler for CodemodeMcp {
    fn get_info(&self) -> InitializeResult {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("codemode", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Call the `codemode` tool with JavaScript; connectors are globals. Use codemode.search and codemode.describe to find methods.".into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![self.tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = self.state.runtime.tool().name;
        if request.name != name.as_str() {
            return Err(McpError::invalid_params(
                format!("unknown tool {:?}; the only tool is {name:?}", request.name),
                None,
            ));
        }
        Ok(self.answer(request.arguments, context).await?.into())
    }
}

/// The Streamable HTTP service mounted at `/mcp` by [`crate::routes`]: crate-private, since the
/// `Host`, `Origin`, token checks and the loopback rule are the router's, in front of it.
/// Cancelling `shutdown` ends every MCP session and its open event stream, so a connected
/// client does not hold up a graceful shutdown.
pub(crate) fn http_service(
    state: SharedState,
) -> StreamableHttpService<CodemodeMcp, LocalSessionManager> {
    let shutdown: CancellationToken = state.options.shutdown.clone();
    let handler = CodemodeMcp::new(state);
    // The `Host` check is the server's own (crate::guard), in front of every route, with
    // `auth.allowed_hosts`; rmcp's fixed list would refuse those names.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve_stdio(state: SharedState) -> Result<(), ServerError> {
    let service = CodemodeMcp::new(state)
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|e| ServerError::Stdio(format!("cannot start: {e}")))?;
    service
        .waiting()
        .await
        .map_err(|e| ServerError::Stdio(e.to_string()))?;
    Ok(())
}
