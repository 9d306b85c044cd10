//! A small MCP server over stdio for the connector's tests.
//!
//! Tools: `get_item` and `list_items` (read-only), `create_item`, `delete_item` (mutating),
//! `fail` (an error result), `crash` (exits mid-call), `slow` (sleeps), `plain` (text),
//! `mixed` (text and an image), `pid`, `child_pid`, and `env` (its environment and working
//! directory). Flags: `--page-size N` pages `tools/list`; `--exit-now` exits before the
//! handshake; `--garbage` writes non-MCP output; `--spawn-child` starts a `sleep` child to
//! check process-group clean-up; `--collide` adds a tool whose name sanitises like another's;
//! `--bad-schema` adds a tool whose input schema does not compile; `--code-tool` adds a Code
//! Mode code tool (`codemode({code})`), and `--only-code-tool` lists nothing else.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Server {
    items: Arc<Mutex<BTreeMap<u64, Value>>>,
    next: Arc<Mutex<u64>>,
    page_size: usize,
    collide: bool,
    bad_schema: bool,
    code_tool: bool,
    only_code_tool: bool,
    child_pid: Option<u32>,
}

fn tool(name: &str, description: &str, schema: Value, read_only: Option<bool>) -> Tool {
    let mut t = json!({"name": name, "description": description, "inputSchema": schema});
    if let Some(ro) = read_only {
        t["annotations"] = json!({"readOnlyHint": ro});
    }
    serde_json::from_value(t).expect("valid tool")
}

fn result(v: Value) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResponse::Complete(
        serde_json::from_value::<CallToolResult>(v).expect("valid result"),
    ))
}

fn text(s: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": s.into()}]})
}

impl Server {
    fn all_tools(&self) -> Vec<Tool> {
        let code = tool(
            "codemode",
            "Runs JavaScript against this server's connectors",
            json!({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
            None,
        );
        if self.only_code_tool {
            return vec![code];
        }
        let id = json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]});
        let empty = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            tool("get_item", "Get one item", id.clone(), Some(true)),
            tool("list_items", "List items", empty.clone(), Some(true)),
            tool(
                "create_item",
                "Create an item",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                Some(false),
            ),
            tool("delete_item", "Delete an item", id, None),
            tool("fail", "Always fails", empty.clone(), Some(true)),
            tool("crash", "Exits the server mid-call", empty.clone(), None),
            tool(
                "slow",
                "Sleeps",
                json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
                Some(true),
            ),
            tool("plain", "Plain text", empty.clone(), Some(true)),
            tool("mixed", "Text and an image", empty.clone(), Some(true)),
            tool("pid", "This process's id", empty.clone(), Some(true)),
            tool(
                "child_pid",
                "The spawned child's id",
                empty.clone(),
                Some(true),
            ),
        ];
        tools.push(tool(
            "env",
            "This process's environment and working directory",
            json!({"type": "object", "properties": {}}),
            Some(true),
        ));
        if self.bad_schema {
            tools.push(tool(
                "broken",
                "Its input schema does not compile",
                json!({"type": "object", "properties": {"x": {"type": "no-such-type"}}}),
                Some(true),
            ));
        }
        if self.code_tool {
            tools.push(code);
        }
        if self.collide {
            tools.push(tool(
                "get-item",
                "Collides with get_item",
                empty,
                Some(true),
            ));
        }
        tools
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("A test item store.")
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let all = self.all_tools();
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let size = if self.page_size == 0 {
            all.len()
        } else {
            self.page_size
        };
        let end = (start + size).min(all.len());
        Ok(ListToolsResult {
            tools: all[start..end].to_vec(),
            next_cursor: (end < all.len()).then(|| end.to_string()),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        match request.name.as_ref() {
            "get_item" => {
                let id = args["id"].as_u64().unwrap_or(0);
                match self.items.lock().unwrap().get(&id) {
                    Some(item) => result(json!({"content": [], "structuredContent": item})),
                    None => result(
                        json!({"isError": true, "content": [{"type": "text", "text": format!("no item {id}")}]}),
                    ),
                }
            }
            "list_items" => {
                let items: Vec<Value> = self.items.lock().unwrap().values().cloned().collect();
                result(text(Value::Array(items).to_string()))
            }
            "create_item" => {
                let id = {
                    let mut n = self.next.lock().unwrap();
                    *n += 1;
                    *n
                };
                let item = json!({"id": id, "name": args["name"]});
                self.items.lock().unwrap().insert(id, item.clone());
                result(text(item.to_string()))
            }
            "delete_item" => {
                let id = args["id"].as_u64().unwrap_or(0);
                match self.items.lock().unwrap().remove(&id) {
                    Some(_) => result(text(format!("deleted {id}"))),
                    None => result(
                        json!({"isError": true, "content": [{"type": "text", "text": format!("no item {id}")}]}),
                    ),
                }
            }
            "fail" => result(
                json!({"isError": true, "content": [{"type": "text", "text": "it failed on purpose"}]}),
            ),
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "slow" => {
                let ms = args["ms"].as_u64().unwrap_or(1000);
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                result(text(format!("slept {ms} ms")))
            }
            "plain" => result(text("just words")),
            "mixed" => result(json!({"content": [
                {"type": "text", "text": "a red dot"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
            ]})),
            "pid" => result(text(std::process::id().to_string())),
            "child_pid" => result(text(
                self.child_pid.map(|p| p.to_string()).unwrap_or_default(),
            )),
            "env" => {
                let env: serde_json::Map<String, Value> = std::env::vars()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                let cwd = std::env::current_dir()
                    .map(|d| d.to_string_lossy().into_owned())
                    .unwrap_or_default();
                result(json!({"content": [], "structuredContent": {"env": env, "cwd": cwd}}))
            }
            "get-item" => result(text("the dashed one")),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    if flag("--exit-now") {
        eprintln!("refusing to start: --exit-now");
        std::process::exit(2);
    }
    if flag("--garbage") {
        println!("Hello! I am not an MCP server.");
        println!("<html>definitely not json-rpc</html>");
        eprintln!("wrote garbage");
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        return;
    }
    let page_size = args
        .iter()
        .position(|a| a == "--page-size")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut child = None;
    if flag("--spawn-child") {
        child = std::process::Command::new("sleep").arg("600").spawn().ok();
    }
    let server = Server {
        page_size,
        collide: flag("--collide"),
        bad_schema: flag("--bad-schema"),
        code_tool: flag("--code-tool"),
        only_code_tool: flag("--only-code-tool"),
        child_pid: child.as_ref().map(|c| c.id()),
        ..Default::default()
    };
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("handshake failed: {e}");
            std::process::exit(1);
        }
    };
    let _ = running.waiting().await;
}
