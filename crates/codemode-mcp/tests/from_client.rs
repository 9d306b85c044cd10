//! `McpConnector::from_client`: a client the host connected itself (here over an in-process
//! pipe), with the same settings, results and guard as a configured server.

use codemode::{CallContext, Connector};
use codemode_mcp::{ClientOptions, McpConnector};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

/// An in-process server: `add` (read-only) and `codemode({code})`, named `name`.
#[derive(Clone)]
struct Pipe {
    name: &'static str,
}

fn tool(v: Value) -> Tool {
    serde_json::from_value(v).unwrap()
}

impl ServerHandler for Pipe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name, "1"))
            .with_instructions("Adds numbers.")
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let number = json!({"type": "number"});
        Ok(ListToolsResult {
            tools: vec![
                tool(json!({"name": "add", "inputSchema": {"type": "object",
                    "properties": {"a": number, "b": number}, "required": ["a", "b"]},
                    "annotations": {"readOnlyHint": true}})),
                tool(json!({"name": "run_code", "inputSchema": {"type": "object",
                    "properties": {"code": {"type": "string"}}, "required": ["code"]}})),
            ],
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        let result = json!({"content": [], "structuredContent": {"sum": sum}});
        Ok(CallToolResponse::Complete(
            serde_json::from_value::<CallToolResult>(result).unwrap(),
        ))
    }
}

/// A connector over a client connected to `server` through an in-process pipe.
async fn connect(server: Pipe, options: ClientOptions) -> Result<McpConnector, String> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.map_err(|e| e.to_string())?;
    McpConnector::from_client("calc", client, options)
        .await
        .map_err(|e| e.to_string())
}

fn ctx() -> CallContext {
    CallContext {
        execution_id: "e".into(),
        seq: 0,
    }
}

#[tokio::test]
async fn a_host_connected_client_becomes_a_connector() {
    // `run_code` takes code: let in only when the host says so.
    let mut options = ClientOptions {
        allow_code_tools: true,
        ..ClientOptions::default()
    };
    options.tools.insert(
        "add".into(),
        serde_json::from_value(json!({"description": "Adds two numbers."})).unwrap(),
    );
    let c = connect(
        Pipe {
            name: "calc-server",
        },
        options,
    )
    .await
    .unwrap();
    let names: Vec<String> = c.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["add", "run_code"]);
    let add = &c.tools()[0];
    assert_eq!(add.description.as_deref(), Some("Adds two numbers."));
    assert!(!add.requires_approval, "readOnlyHint is honoured");
    assert!(c.tools()[1].requires_approval, "unannotated fails closed");
    assert_eq!(c.instructions().as_deref(), Some("Adds numbers."));
    let sum = c.execute("add", json!({"a": 2, "b": 3.5}), ctx()).await;
    assert_eq!(sum.unwrap(), json!({"sum": 5.5}));
    assert!(c.warnings().is_empty());

    // The connection is the host's: once closed, calls say so and nothing is restarted.
    c.shutdown().await;
    let err = c
        .execute("add", json!({"a": 1, "b": 1}), ctx())
        .await
        .unwrap_err();
    assert!(err.0.contains("`calc` is not available"), "{err}");
}

/// A tool that takes code is left out whatever the server calls itself, unless the host
/// allows code tools.
#[tokio::test]
async fn a_tool_that_takes_code_is_left_out_unless_allowed() {
    for server in ["codemode", "calc"] {
        let c = connect(Pipe { name: server }, ClientOptions::default())
            .await
            .unwrap();
        let names: Vec<String> = c.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["add"], "{server}");
        assert!(
            c.warnings()[0].contains("tool \"run_code\" is left out")
                && c.warnings()[0].contains("would let code run code")
                && c.warnings()[0].contains("allow_code_tools = true"),
            "{:?}",
            c.warnings()
        );
    }
    let options = ClientOptions {
        allow_code_tools: true,
        ..ClientOptions::default()
    };
    let allowed = connect(Pipe { name: "calc" }, options).await;
    assert_eq!(
        allowed.unwrap().tools().len(),
        2,
        "allowed, the code tool is kept"
    );
}

#[tokio::test]
async fn a_bad_connector_name_is_refused() {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = (Pipe { name: "x" }).serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let err = McpConnector::from_client("not a name", client, ClientOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("MCP connector `not a name`:"), "{err}");
}
