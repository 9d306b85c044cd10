//! A Rust agent host: hands `runtime.tool()` to an LLM API and runs the code the model writes.
//!
//! Nothing goes over the network. The example builds the request body that Anthropic's
//! Messages API takes, with the `codemode` tool in it, then takes the `tool_use` block a model
//! would answer with (canned here), runs its code with `runtime.call`, and builds the
//! `tool_result` message of the next request. A real host sends each body with its HTTP
//! client and loops until the model stops asking for the tool.
//!
//! Run it with `cargo run -p codemode-examples --example agent_host`.

use codemode::discovery::ToolDefinition;
use codemode::{Outcome, Runtime, RustConnector, RustTool};
use codemode_quickjs::QuickJsExecutor;
use codemode_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::error::Error;
use std::sync::Arc;

/// The model the request names; any Messages API model that supports tools will do.
const MODEL: &str = "claude-sonnet-4-5";

/// What the user asks.
const USER_PROMPT: &str = "Which of my tasks are still open?";

/// A `tasks` connector over a fixed list: one read-only method.
fn tasks_connector() -> RustConnector {
    RustConnector::new("tasks")
        .instructions("The user's to-do list.")
        .tool(
            RustTool::new("list_tasks", |args: Value, _ctx| async move {
                let all = json!([
                    { "id": 1, "title": "Renew passport", "done": false },
                    { "id": 2, "title": "Book dentist", "done": true },
                    { "id": 3, "title": "Pay electricity bill", "done": false },
                ]);
                let wanted = args.get("done").and_then(Value::as_bool);
                let tasks = all.as_array().into_iter().flatten();
                let kept: Vec<&Value> = tasks
                    .filter(|t| wanted.is_none_or(|w| t["done"] == w))
                    .collect();
                Ok(json!(kept))
            })
            .description("Lists tasks, optionally only the done or the open ones.")
            .input_schema(json!({
                "type": "object",
                "properties": { "done": { "type": "boolean", "description": "Keep only tasks with this state." } },
                "additionalProperties": false
            }))
            .read_only(),
        )
}

/// The body of a Messages API request offering the model the `codemode` tool.
fn request_body(tool: &ToolDefinition, messages: &[Value]) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "tools": [{
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema,
        }],
        "messages": messages,
    })
}

/// The assistant message a model would answer with: some text, then a `tool_use` block.
fn canned_response() -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "stop_reason": "tool_use",
        "content": [
            { "type": "text", "text": "I'll look up your open tasks." },
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "codemode",
                "input": {
                    "code": "async () => {\n  const open = await tasks.list_tasks({ done: false });\n  console.log(`${open.length} open`);\n  return open.map((t) => t.title);\n}"
                }
            }
        ]
    })
}

/// The `tool_result` block that answers one `tool_use`, from the runtime's outcome.
fn tool_result(tool_use_id: &str, outcome: &Outcome) -> Value {
    let (content, is_error) = match outcome {
        Outcome::Completed { result, logs, .. } => {
            (json!({ "result": result, "logs": logs }).to_string(), false)
        }
        Outcome::Paused {
            execution_id,
            pending,
        } => {
            let waiting: Vec<String> = pending
                .iter()
                .map(|p| format!("{}.{}", p.connector, p.method))
                .collect();
            let text = format!(
                "Execution {execution_id} is paused: {} waits for a person's approval. Tell the user; do not retry.",
                waiting.join(", ")
            );
            (text, false)
        }
        Outcome::Error { error, logs, .. } => {
            (json!({ "error": error, "logs": logs }).to_string(), true)
        }
    };
    json!({
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": content,
        "is_error": is_error,
    })
}

/// The two request bodies of one agent turn: the first, and the one carrying the tool result.
struct Turn {
    first_request: Value,
    next_request: Value,
}

/// Builds a runtime, asks the (canned) model, runs its code and answers it.
async fn run(store_path: &std::path::Path) -> Result<Turn, Box<dyn Error>> {
    let store = Arc::new(SqliteStore::open(store_path)?);
    let executor = Arc::new(QuickJsExecutor::default());
    let runtime = Runtime::builder(store, executor)
        .connector(tasks_connector())
        .hint("tasks", "the user's to-do list")
        .build()?;

    let tool = runtime.tool();
    let mut messages = vec![json!({ "role": "user", "content": USER_PROMPT })];
    let first_request = request_body(&tool, &messages);

    // A real host POSTs `first_request` to https://api.anthropic.com/v1/messages here.
    let response = canned_response();
    let content = response["content"].as_array().cloned().unwrap_or_default();
    let mut results = Vec::new();
    for block in &content {
        if block["type"] != "tool_use" || block["name"] != tool.name.as_str() {
            continue;
        }
        let code = block["input"]["code"].as_str().unwrap_or_default();
        let outcome = runtime.call(code).await?;
        results.push(tool_result(
            block["id"].as_str().unwrap_or_default(),
            &outcome,
        ));
    }
    messages.push(json!({ "role": "assistant", "content": content }));
    messages.push(json!({ "role": "user", "content": results }));
    Ok(Turn {
        first_request,
        next_request: request_body(&tool, &messages),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let turn = run(&dir.path().join("codemode.db")).await?;
    println!("First request body:\n{:#}\n", turn.first_request);
    println!(
        "Next request body, with the tool result:\n{:#}",
        turn.next_request
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_model_gets_the_tool_and_the_result_of_its_code() {
        let dir = tempfile::tempdir().unwrap();
        let turn = run(&dir.path().join("codemode.db")).await.unwrap();

        let tool = &turn.first_request["tools"][0];
        assert_eq!(tool["name"], "codemode");
        assert_eq!(tool["input_schema"]["required"], json!(["code"]));
        let description = tool["description"].as_str().unwrap();
        assert!(description.contains("tasks (1 method): the user's to-do list"));

        let messages = turn.next_request["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["role"], "assistant");
        let result = &messages[2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(result["tool_use_id"], "toolu_01");
        assert_eq!(result["is_error"], false);
        let content: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
        assert_eq!(
            content,
            json!({
                "result": ["Renew passport", "Pay electricity bill"],
                "logs": ["2 open"],
            })
        );
    }

    #[test]
    fn an_error_outcome_is_marked_as_an_error_for_the_model() {
        let outcome = Outcome::Error {
            execution_id: "e1".into(),
            error: "ReferenceError: x is not defined (line 2, column 3)".into(),
            code: codemode::ErrorCode::Thrown,
            retryable: false,
            logs: vec![],
        };
        let block = tool_result("toolu_09", &outcome);
        assert_eq!(block["is_error"], true);
        assert!(block["content"].as_str().unwrap().contains("line 2"));
    }
}
