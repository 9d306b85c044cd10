//! `codemode openapi SPEC`: an MCP server (stdio) with two tools over one OpenAPI API.
//!
//! - `search`: code run against the document, `$ref`s resolved, as `<name>.spec()`;
//! - `execute`: code that calls `<name>.request({method, path, query, body, headers})`,
//!   authenticated host-side by `codemode-openapi` (credentials never reach the sandbox).
//!
//! Both run in the same durable runtime and QuickJS sandbox as `codemode serve`. `codemode` is
//! the SDK's global, so the document and the request function are a connector of their own
//! (`api` by default); each tool's description says how to use it. Outputs are cut to a token
//! budget with a marker (`codemode::truncate_text`).

use crate::app::{self, CommonArgs, Settings};
use anyhow::{Context, Result};
use async_trait::async_trait;
use codemode::{
    CallContext, Connector, Outcome, ReplayPolicy, Runtime, ToolError, ToolSpec, TruncateOptions,
};
use codemode_openapi::{AuthConfig, OpenApiConfig, OpenApiConnector};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Flags of `codemode openapi`.
#[derive(Debug, Clone, clap::Args)]
pub struct OpenApiArgs {
    /// The OpenAPI 3.0/3.1 document: a file (JSON or YAML) or an http(s):// URL.
    pub spec: String,
    /// Where requests go (default: the document's first `servers` entry).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The sandbox global holding `spec()` and `request()`.
    #[arg(long, default_value = "api")]
    pub name: String,
    /// The environment variable holding a bearer token added to every request host-side.
    #[arg(long, value_name = "VAR")]
    pub bearer_env: Option<String>,
    /// The budget of each tool's output, in tokens (about four characters each).
    #[arg(long, default_value_t = 6_000)]
    pub max_tokens: usize,
}

/// Loads the document, builds the two runtimes and serves MCP on stdio.
pub async fn run(common: &CommonArgs, args: &OpenApiArgs) -> Result<()> {
    let mut settings = Settings::load(common)?;
    settings.demo = false;
    let progress = crate::progress::Progress::start(&format!("loading {}", args.spec));
    let mut config = OpenApiConfig::new(args.name.clone(), args.spec.clone());
    config.base_url = args.base_url.clone();
    config.expose_spec = true;
    // As the reference's openApiMcpServer: `execute` is the API itself, no approval step.
    config.approval.allow = vec!["*".into()];
    config.auth = args
        .bearer_env
        .clone()
        .map(|token_env| AuthConfig::Bearer { token_env });
    let api = OpenApiConnector::from_spec(config)
        .await
        .with_context(|| format!("cannot load the OpenAPI document {}", args.spec))?;
    let ctx = CallContext {
        execution_id: "load".into(),
        seq: 0,
    };
    let raw = api
        .execute(codemode_openapi::SPEC_METHOD, json!({}), ctx)
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the document {}: {e}", args.spec))?;
    let spec = Arc::new(resolve_refs(&raw));
    progress.done();
    let request = api
        .tools()
        .into_iter()
        .find(|t| t.name == codemode_openapi::REQUEST_METHOD);
    let api: Arc<dyn Connector> = Arc::new(api);

    let (store, _, _, _) = app::open_store(&settings).await?;
    let search = Runtime::builder(store.clone(), Arc::new(app::executor(&settings)))
        .name("openapi-search")
        .connector(SpecApi {
            name: args.name.clone(),
            spec: spec.clone(),
            request: None,
        })
        .build()
        .context("cannot build the search runtime")?;
    let execute = Runtime::builder(store, Arc::new(app::executor(&settings)))
        .name("openapi-execute")
        .connector(SpecApi {
            name: args.name.clone(),
            spec,
            request: request.map(|t| (t, api)),
        })
        .build()
        .context("cannot build the execute runtime")?;
    let handler = OpenApiMcp {
        name: args.name.clone(),
        search,
        execute,
        truncate: TruncateOptions {
            max_chars: None,
            max_tokens: Some(args.max_tokens.max(1)),
        },
    };
    tracing::info!(spec = %args.spec, "serving the OpenAPI search and execute tools over stdio");
    let service = handler
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP over stdio failed to start: {e}"))?;
    service.waiting().await?;
    Ok(())
}

/// Inlines every local `$ref` (`#/...`). A reference met again inside its own expansion (a
/// recursive schema) stays a `$ref`, and so do references once a node budget is spent, so a
/// huge document cannot blow up.
pub fn resolve_refs(doc: &Value) -> Value {
    let mut budget: usize = 2_000_000;
    let mut stack = Vec::new();
    resolve(doc, doc, &mut stack, &mut budget)
}

fn resolve(root: &Value, v: &Value, stack: &mut Vec<String>, budget: &mut usize) -> Value {
    *budget = budget.saturating_sub(1);
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                if let Some(pointer) = r.strip_prefix('#') {
                    let target = root.pointer(pointer);
                    if let Some(target) = target.filter(|_| *budget > 0 && !stack.contains(r)) {
                        stack.push(r.clone());
                        let mut resolved = resolve(root, target, stack, budget);
                        stack.pop();
                        // Siblings of `$ref` (3.1: description, summary) are kept.
                        if let Value::Object(out) = &mut resolved {
                            for (k, s) in map.iter().filter(|(k, _)| *k != "$ref") {
                                out.insert(k.clone(), resolve(root, s, stack, budget));
                            }
                        }
                        return resolved;
                    }
                }
            }
            let mut out = Map::with_capacity(map.len());
            for (k, s) in map {
                out.insert(k.clone(), resolve(root, s, stack, budget));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|s| resolve(root, s, stack, budget))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The sandbox side: `spec()` (the resolved document) and, for `execute`, `request()`.
struct SpecApi {
    name: String,
    spec: Arc<Value>,
    request: Option<(ToolSpec, Arc<dyn Connector>)>,
}

#[async_trait]
impl Connector for SpecApi {
    fn name(&self) -> &str {
        &self.name
    }

    fn instructions(&self) -> Option<String> {
        Some(format!(
            "`{0}.spec()` returns the OpenAPI document with local $refs resolved.{1}",
            self.name,
            if self.request.is_some() {
                format!(
                    " `{0}.request({{method, path, query, body, headers}})` calls the API; credentials are added by the host.",
                    self.name
                )
            } else {
                String::new()
            }
        ))
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let mut spec = ToolSpec::new(codemode_openapi::SPEC_METHOD);
        spec.description = Some("The OpenAPI document, local $refs resolved.".into());
        spec.input_schema =
            json!({"type": "object", "properties": {}, "additionalProperties": false});
        spec.requires_approval = false;
        spec.read_only = true;
        spec.replay = ReplayPolicy::Reexecute;
        let mut tools = vec![spec];
        if let Some((request, _)) = &self.request {
            tools.push(request.clone());
        }
        tools
    }

    async fn execute(
        &self,
        method: &str,
        args: Value,
        ctx: CallContext,
    ) -> Result<Value, ToolError> {
        match (method, &self.request) {
            (codemode_openapi::SPEC_METHOD, _) => Ok(self.spec.as_ref().clone()),
            (codemode_openapi::REQUEST_METHOD, Some((_, api))) => {
                api.execute(method, args, ctx).await
            }
            _ => Err(ToolError(format!("{}.{method} does not exist", self.name))),
        }
    }
}

/// The MCP handler: `search` and `execute`.
#[derive(Clone)]
struct OpenApiMcp {
    name: String,
    search: Runtime,
    execute: Runtime,
    truncate: TruncateOptions,
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
        let search = format!(
            "Search the API's OpenAPI document with JavaScript. The code is the body of an async \
             function; `await {n}.spec()` returns the document with every local $ref resolved. \
             Return only what you need: the output is cut to about {budget} tokens.\n\n\
             Example:\n\
             const spec = await {n}.spec();\n\
             const ops = [];\n\
             for (const [path, item] of Object.entries(spec.paths))\n\
             \x20 for (const [method, op] of Object.entries(item))\n\
             \x20   if (op.summary?.toLowerCase().includes('user')) ops.push({{ method: method.toUpperCase(), path, summary: op.summary }});\n\
             return ops;"
        );
        let execute = format!(
            "Call the API with JavaScript. The code is the body of an async function; \
             `await {n}.request({{ method, path, query, body, headers }})` sends one request below \
             the API's base URL and returns the parsed response (credentials are added by the \
             host and never visible here; a non-2xx answer throws). `await {n}.spec()` returns \
             the document. The output is cut to about {budget} tokens.\n\n\
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

    fn shape(&self, outcome: &Outcome) -> CallToolResult {
        let (text, error) = match outcome {
            Outcome::Completed { result, logs, .. } => {
                let mut text = match result {
                    Value::String(s) => s.clone(),
                    v => serde_json::to_string_pretty(v).unwrap_or_default(),
                };
                if !logs.is_empty() {
                    text.push_str("\n\nconsole:\n");
                    text.push_str(&logs.join("\n"));
                }
                (text, false)
            }
            Outcome::Error { error, logs, .. } => {
                let mut text = format!("Error: {error}");
                if !logs.is_empty() {
                    text.push_str("\n\nconsole:\n");
                    text.push_str(&logs.join("\n"));
                }
                (text, true)
            }
            Outcome::Paused { .. } => return crate::mcp::outcome_result(outcome, ""),
        };
        let mut r = CallToolResult::success(vec![ContentBlock::text(codemode::truncate_text(
            &text,
            self.truncate,
        ))]);
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
            "Use `search` to find operations in the API's OpenAPI document ({0}.spec()), then \
             `execute` to call them ({0}.request(...)).",
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
        Ok(self.shape(&outcome).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_inlined_and_recursion_stays_a_ref() {
        let doc = json!({
            "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/Ok"}}}}},
            "components": {
                "responses": {"Ok": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}},
                "schemas": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}}}
            }
        });
        let r = resolve_refs(&doc);
        let ok = &r["paths"]["/a"]["get"]["responses"]["200"];
        assert_eq!(ok["description"], "ok");
        let node = &ok["content"]["application/json"]["schema"];
        assert_eq!(node["type"], "object");
        assert_eq!(
            node["properties"]["next"]["$ref"],
            "#/components/schemas/Node"
        );
    }
}
