//! The sandbox side of the OpenAPI search/execute server: a connector whose methods query the
//! document host-side (`paths`, `operation`, `get`, and `spec` for a small document) and, for
//! `execute`, whose `request()` calls the API through `codemode-openapi`.

use super::query::SpecIndex;
use crate::error::ServerError;
use async_trait::async_trait;
use codemode::{CallContext, Connector, ReplayPolicy, ToolError, ToolSpec};
use codemode_openapi::OpenApiConnector;
use serde_json::{json, Value};
use std::sync::Arc;

/// The method listing operations.
pub const PATHS_METHOD: &str = "paths";
/// The method returning one operation.
pub const OPERATION_METHOD: &str = "operation";
/// The method returning any part of the document by JSON pointer.
pub const GET_METHOD: &str = "get";

/// The two connectors of the server: `search` queries the document, `execute` also calls the API.
pub struct SpecConnectors {
    /// For the `search` tool.
    pub search: SpecApi,
    /// For the `execute` tool.
    pub execute: SpecApi,
    /// The index both share (operation count, whether `spec()` hands out the whole document).
    pub index: Arc<SpecIndex>,
    /// The configured `description` of what the API is for.
    pub description: Option<String>,
}

/// Takes the document from `api` (loaded with `expose_spec`), indexes it once, and builds both
/// connectors under the global `name`; the document is shared, never copied.
pub async fn spec_connectors(
    name: &str,
    api: OpenApiConnector,
) -> Result<SpecConnectors, ServerError> {
    let doc = api.document().ok_or_else(|| {
        ServerError::Spec("the connector was not loaded with `expose_spec`".into())
    })?;
    let index = Arc::new(SpecIndex::new(doc));
    let description = api.description().map(str::to_string);
    let request = api
        .tools()
        .into_iter()
        .find(|t| t.name == codemode_openapi::REQUEST_METHOD);
    let api: Arc<dyn Connector> = Arc::new(api);
    Ok(SpecConnectors {
        search: SpecApi {
            name: name.to_string(),
            index: index.clone(),
            request: None,
        },
        execute: SpecApi {
            name: name.to_string(),
            index: index.clone(),
            request: request.map(|t| (t, api)),
        },
        index,
        description,
    })
}

/// The sandbox side: document queries and, for `execute`, `request()`.
pub struct SpecApi {
    name: String,
    index: Arc<SpecIndex>,
    request: Option<(ToolSpec, Arc<dyn Connector>)>,
}

fn query_tool(name: &str, description: &str, input: Value) -> ToolSpec {
    let mut t = ToolSpec::new(name);
    t.description = Some(description.into());
    t.input_schema = input;
    t.requires_approval = false;
    t.read_only = true;
    t.replay = ReplayPolicy::Reexecute;
    t
}

#[async_trait]
impl Connector for SpecApi {
    fn name(&self) -> &str {
        &self.name
    }

    fn instructions(&self) -> Option<String> {
        let n = &self.name;
        let mut s = format!(
            "`{n}.paths(filter)` lists operations, `{n}.operation('METHOD /path')` returns one \
             with its $refs resolved, `{n}.get('#/pointer')` any part of the document."
        );
        if self.request.is_some() {
            s.push_str(&format!(
                " `{n}.request({{method, path, query, body, headers}})` calls the API; credentials are added by the host."
            ));
        }
        Some(s)
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let string_or = |props: Value| json!({"anyOf": [{"type": "string"}, {"type": "object", "properties": props, "additionalProperties": false}]});
        let s = json!({"type": "string"});
        let mut tools = vec![
            query_tool(
                codemode_openapi::SPEC_METHOD,
                "The whole OpenAPI document, local $refs resolved (only for a small document).",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
            query_tool(
                PATHS_METHOD,
                "Operations as {method, path, operationId, summary, tags}; the filter is words that must all appear, or {query, tag, method, path}.",
                string_or(json!({"query": s, "tag": s, "method": s, "path": s})),
            ),
            query_tool(
                OPERATION_METHOD,
                "One operation ('GET /path', an operationId, or {method, path}) with parameters, requestBody and responses, $refs resolved.",
                string_or(json!({"method": s, "path": s, "operationId": s})),
            ),
            query_tool(
                GET_METHOD,
                "Any part of the document by JSON pointer ('#/components/schemas/NAME'), $refs resolved.",
                string_or(json!({"pointer": s})),
            ),
        ];
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
        let n = &self.name;
        let answer = match (method, &self.request) {
            (codemode_openapi::SPEC_METHOD, _) => self.index.spec(n),
            (PATHS_METHOD, _) => self.index.paths(&args),
            (OPERATION_METHOD, _) => self.index.operation(n, &args),
            (GET_METHOD, _) => self.index.get(n, &args),
            (codemode_openapi::REQUEST_METHOD, Some((_, api))) => {
                return api.execute(method, args, ctx).await
            }
            _ => return Err(ToolError(format!("{n}.{method} does not exist"))),
        };
        answer.map_err(|e| ToolError(format!("{n}.{e}")))
    }
}
