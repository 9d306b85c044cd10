//! The MCP server: one tool, `codemode`, over Streamable HTTP (`/mcp`) or stdio.

use crate::http::AppState;
use codemode::Outcome;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;

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

    /// Runs code and shapes the outcome as a tool result.
    pub async fn run(&self, code: &str) -> Result<CallToolResult, McpError> {
        let outcome = self
            .state
            .runtime
            .call(code)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
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
        _context: RequestContext<RoleServer>,
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
        Ok(self.run(code).await?.into())
    }
}

/// The Streamable HTTP service mounted at `/mcp`.
/// On loopback the `Host` header is checked against local names (DNS-rebinding protection);
/// elsewhere the bearer token guards the endpoint and any host is accepted.
pub fn http_service(
    state: AppState,
    loopback: bool,
) -> StreamableHttpService<CodemodeMcp, LocalSessionManager> {
    let handler = CodemodeMcp::new(state);
    let mut config = StreamableHttpServerConfig::default();
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
