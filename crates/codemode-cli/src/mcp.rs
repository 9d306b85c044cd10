//! The MCP server: one tool, `codemode`, over Streamable HTTP (`/mcp`) or stdio.

use crate::http::AppState;
use codemode::Outcome;
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

/// The MCP handler over the shared state.
#[derive(Clone)]
pub struct CodemodeMcp {
    state: AppState,
}

impl CodemodeMcp {
    /// A handler over the state.
    pub fn new(state: AppState) -> Self {
        CodemodeMcp { state }
    }

    fn tool(&self) -> Tool {
        let def = self.state.runtime.tool();
        let schema = match def.input_schema {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        Tool::new(def.name, def.description, Arc::new(schema))
    }

    /// Runs code and shapes the outcome as a tool result. Where the client supports
    /// elicitation, each pause is put to the user: accept approves and continues in the same
    /// call, decline rejects, and anything else leaves it paused for approval elsewhere.
    pub async fn run(
        &self,
        code: &str,
        peer: Option<&Peer<RoleServer>>,
    ) -> Result<CallToolResult, McpError> {
        let internal = |e: codemode::RuntimeError| McpError::internal_error(e.to_string(), None);
        let rt = &self.state.runtime;
        let mut outcome = rt.call(code).await.map_err(internal)?;
        let can_ask = peer.is_some_and(|p| {
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
            let message = format!(
                "The code wants to run {}.{} with {}. Approve this action?",
                first.connector,
                first.method,
                serde_json::to_string_pretty(&first.args).unwrap_or_default()
            );
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
                ElicitationAction::Accept => match rt.approve(execution_id).await {
                    Ok(next) => outcome = next,
                    Err(e) => {
                        tracing::warn!(error = %e, "approval after elicitation failed");
                        break;
                    }
                },
                ElicitationAction::Decline => {
                    let id = execution_id.clone();
                    let seq = first.seq;
                    if rt.reject(&id, seq).await.map_err(internal)? {
                        let v = json!({
                            "status": "rejected",
                            "executionId": id,
                            "error": format!("the user rejected {}.{}; nothing after it ran", first.connector, first.method),
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
        Ok(outcome_result(&outcome, &self.state.approve_hint))
    }
}

/// The outcome as `structuredContent` and as text; a pause says who must approve and how.
pub fn outcome_result(outcome: &Outcome, approve_hint: &str) -> CallToolResult {
    let value = serde_json::to_value(outcome).unwrap_or(Value::Null);
    let mut result = CallToolResult::structured(value.clone());
    let mut text = value.to_string();
    match outcome {
        Outcome::Paused {
            execution_id,
            pending,
        } => {
            let actions: Vec<String> = pending
                .iter()
                .map(|p| format!("{}.{}({})", p.connector, p.method, p.args))
                .collect();
            text.push_str(&format!(
                "\n\nThis execution is paused: a person must approve {} before it continues. Tell the user; they approve with `codemode approve {execution_id}`{approve_hint} (or reject with `codemode reject {execution_id} SEQ`). Do not retry the code: approval resumes it where it stopped.",
                actions.join(", ")
            ));
        }
        Outcome::Error { .. } => result.is_error = Some(true),
        Outcome::Completed { .. } => {}
    }
    result.content = vec![ContentBlock::text(text)];
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
        let code = request.arguments.as_ref().and_then(|a| a.get("code"));
        let Some(Value::String(code)) = code else {
            let mut r = CallToolResult::structured_error(
                json!({"error": "`code` must be a string of JavaScript"}),
            );
            r.is_error = Some(true);
            return Ok(r.into());
        };
        Ok(self.run(code, Some(&context.peer)).await?.into())
    }
}

/// The Streamable HTTP service mounted at `/mcp`.
/// On loopback the `Host` header is checked against local names (DNS-rebinding protection);
/// elsewhere the bearer token guards the endpoint and any host is accepted.
/// Cancelling `shutdown` ends every MCP session and its open event stream, so a connected
/// client does not hold up a graceful shutdown.
pub fn http_service(
    state: AppState,
    loopback: bool,
    shutdown: CancellationToken,
) -> StreamableHttpService<CodemodeMcp, LocalSessionManager> {
    let handler = CodemodeMcp::new(state);
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    if !loopback {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve_stdio(state: AppState) -> anyhow::Result<()> {
    let service = CodemodeMcp::new(state)
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP over stdio failed to start: {e}"))?;
    service.waiting().await?;
    Ok(())
}
