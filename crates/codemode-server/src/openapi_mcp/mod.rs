//! The OpenAPI search/execute server: an MCP server with two tools over one OpenAPI API.
//!
//! - `search`: code that queries the document host-side (`<name>.paths(filter)`,
//!   `<name>.operation('GET /path')`, `<name>.get('#/pointer')`, and `<name>.spec()` for a
//!   small document), so a large one (GitHub's 13 MB) never has to fit the sandbox;
//! - `execute`: code that calls `<name>.request({method, path, query, body, headers})`,
//!   authenticated host-side by `codemode-openapi` (credentials never reach the sandbox).
//!
//! Both run in a durable runtime and QuickJS sandbox like the `codemode` tool. `codemode` is
//! the SDK's global, so the document and the request function are a connector of their own
//! (`api` by default); each tool's description says how to use it. Outputs are cut to a token
//! budget by structural truncation (`codemode::value::truncate_outcome`).

mod kind;
mod query;
mod spec;

pub use kind::{LoadedSpec, SpecKind};
pub use query::{resolve_refs_within, SpecIndex, PART_BUDGET, SPEC_MAX_CHARS};
pub use spec::{
    spec_connectors, SpecApi, SpecConnectors, GET_METHOD, OPERATION_METHOD, PATHS_METHOD,
};

use crate::error::ServerError;
use codemode::{Outcome, Runtime, TruncateOptions};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The MCP handler: `search` and `execute`.
#[derive(Clone)]
pub struct OpenApiMcp {
    name: String,
    search: Runtime,
    execute: Runtime,
    truncate: TruncateOptions,
    description: Option<String>,
    operations: usize,
    small: bool,
}

fn code_schema(what: &str) -> Arc<Map<String, Value>> {
    let schema = json!({
        "type": "object",
        "properties": {"code": {"type": "string", "description": what}},
        "required": ["code"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

impl OpenApiMcp {
    fn tools(&self) -> Vec<Tool> {
        let n = &self.name;
        let budget = self.truncate.max_tokens.unwrap_or(6_000);
        let head = match &self.description {
            Some(d) if !d.trim().is_empty() => format!("{}\n\n", d.trim()),
            _ => String::new(),
        };
        let whole = if self.small {
            format!(" `await {n}.spec()` returns the whole document, local $refs resolved.")
        } else {
            " The document is too large to load whole: query it with the functions above.".into()
        };
        let queries = format!(
            "The document is queried host-side, each call awaited:\n             - `{n}.paths(filter?)`: the {ops} operations as `{{method, path, operationId, summary, tags}}`; \
             `filter` is words that must all appear (in the path, operationId, summary, tags or \
             description) or `{{query, tag, method, path}}` (`path`: a substring).\n             - `{n}.operation('GET /path/{{id}}')` (or an operationId, or `{{method, path}}`): the \
             operation with `parameters`, `requestBody` and `responses`, $refs resolved.\n             - `{n}.get('#/components/schemas/NAME')`: any part of the document by JSON pointer, \
             $refs resolved (a ref left as `$ref` in a very large part can be followed the same \
             way).{whole}",
            ops = self.operations
        );
        let search = format!(
            "{head}Search the API's OpenAPI document with JavaScript. The code is the body of an \
             async function. {queries}\nReturn only what you need: the output is cut to about \
             {budget} tokens.\n\n\
             Example:\n\
             const ops = await {n}.paths('issue comment');\n\
             const op = await {n}.operation(`${{ops[0].method}} ${{ops[0].path}}`);\n\
             return {{ ops, parameters: op.parameters.map(p => p.name) }};"
        );
        let execute = format!(
            "{head}Call the API with JavaScript. The code is the body of an async function; \
             `await {n}.request({{ method, path, query, body, headers }})` sends one request below \
             the API's base URL and returns the parsed response (credentials are added by the \
             host and never visible here; a non-2xx answer throws). `{n}.paths`, \
             `{n}.operation` and `{n}.get` query the document as in `search`. The output is cut \
             to about {budget} tokens.\n\n\
             Example:\n\
             const items = await {n}.request({{ method: 'GET', path: '/items', query: {{ limit: 10 }} }});\n\
             return items.map(i => i.name);"
        );
        vec![
            Tool::new(
                "search",
                search,
                code_schema("JavaScript that reads the document"),
            ),
            Tool::new(
                "execute",
                execute,
                code_schema("JavaScript that calls the API"),
            ),
        ]
    }

    fn shape(&self, outcome: Outcome) -> CallToolResult {
        // Structural truncation first: a cut result stays valid JSON of the same shape.
        let outcome = codemode::value::truncate_outcome(outcome, self.truncate);
        let (text, error) = match &outcome {
            Outcome::Completed { result, logs, .. } => {
                let mut text = match result {
                    Value::String(s) => s.clone(),
                    v => {
                        let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
                        if pretty.chars().count() <= self.truncate.budget_chars() {
                            pretty
                        } else {
                            v.to_string()
                        }
                    }
                };
                if !logs.is_empty() {
                    text.push_str("\n\nconsole:\n");
                    text.push_str(&logs.join("\n"));
                }
                (text, false)
            }
            Outcome::Error {
                error,
                code,
                retryable,
                logs,
                ..
            } => {
                let retry = if *retryable {
                    "running it again may succeed"
                } else {
                    "change the code before running it again"
                };
                let mut text = format!("Error: {error}\n\ncode: {code} ({retry})");
                if !logs.is_empty() {
                    text.push_str("\n\nconsole:\n");
                    text.push_str(&logs.join("\n"));
                }
                (text, true)
            }
            Outcome::Paused { .. } => {
                return crate::mcp::outcome_result(&outcome, &crate::ServerOptions::default())
            }
        };
        let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
        if error {
            r.is_error = Some(true);
        }
        r
    }
}

impl ServerHandler for OpenApiMcp {
    fn get_info(&self) -> InitializeResult {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("codemode-openapi", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "Use `search` to find operations in the API's OpenAPI document ({0}.paths(), \
             {0}.operation()), then `execute` to call them ({0}.request(...)).",
            self.name
        ));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let runtime = match request.name.as_ref() {
            "search" => &self.search,
            "execute" => &self.execute,
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool {other:?}; the tools are \"search\" and \"execute\""),
                    None,
                ))
            }
        };
        let code = request.arguments.as_ref().and_then(|a| a.get("code"));
        let Some(Value::String(code)) = code else {
            let mut r = CallToolResult::success(vec![ContentBlock::text(
                "`code` must be a string of JavaScript",
            )]);
            r.is_error = Some(true);
            return Ok(r.into());
        };
        let outcome = runtime
            .call(code)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(self.shape(outcome).into())
    }
}

impl OpenApiMcp {
    /// The server over the global `name`, a `search` and an `execute` runtime, each tool's
    /// output cut to about `max_tokens` tokens.
    pub fn new(
        name: impl Into<String>,
        search: Runtime,
        execute: Runtime,
        max_tokens: usize,
    ) -> Self {
        OpenApiMcp {
            name: name.into(),
            search,
            execute,
            truncate: TruncateOptions {
                max_chars: None,
                max_tokens: Some(max_tokens.max(1)),
            },
            description: None,
            operations: 0,
            small: true,
        }
    }

    /// Describes the document in the tools' descriptions: what the API is for (the
    /// configured `description`), how many operations it has, and whether `spec()` returns it
    /// whole.
    pub fn with_document(mut self, index: &SpecIndex, description: Option<String>) -> Self {
        self.description = description;
        self.operations = index.operation_count();
        self.small = index.is_small();
        self
    }

    /// Serves MCP on stdin/stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), ServerError> {
        let service = self
            .serve(rmcp::transport::io::stdio())
            .await
            .map_err(|e| ServerError::Stdio(format!("cannot start: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| ServerError::Stdio(e.to_string()))?;
        Ok(())
    }
}
