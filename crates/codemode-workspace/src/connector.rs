//! The connector: the workspace as the sandbox global `state`.

use crate::{Workspace, WorkspaceError, DEFAULT_CONNECTOR_NAME};
use async_trait::async_trait;
use codemode::{CallContext, Connector, FileOp, ToolError, ToolSpec};
use serde_json::{json, Value};

/// The workspace's methods as one connector (`state` unless renamed).
#[derive(Debug, Clone)]
pub struct StateConnector {
    name: String,
    workspace: Workspace,
}

const PATH: &str = "Absolute POSIX path, e.g. /data/items.json (no `..`, no URLs).";

fn schema(properties: &[(&str, Value)]) -> Value {
    let mut props = serde_json::Map::new();
    for (name, schema) in properties {
        props.insert((*name).to_string(), schema.clone());
    }
    let required: Vec<&str> = properties.iter().map(|(n, _)| *n).collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn path_prop(description: &str) -> (&'static str, Value) {
    (
        "path",
        json!({"type": "string", "description": description}),
    )
}

fn tool(name: &str, description: &str, input: Value, write: bool) -> ToolSpec {
    let mut spec = ToolSpec::new(name);
    spec.description = Some(description.to_string());
    spec.input_schema = input;
    // Declared explicitly: workspace writes need no approval (each has a revert), reads are
    // read-only.
    spec.requires_approval = false;
    spec.read_only = !write;
    spec.has_revert = write;
    spec
}

fn text(args: &Value, field: &str) -> Result<String, ToolError> {
    args.get(field)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ToolError::new(format!("`{field}` must be a string")))
}

fn out(e: WorkspaceError) -> ToolError {
    ToolError::new(e.to_string())
}

fn to_json(value: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::new(format!("encoding a result: {e}")))
}

impl StateConnector {
    /// The connector over `workspace`, named `state`.
    pub fn new(workspace: Workspace) -> Self {
        Self::named(DEFAULT_CONNECTOR_NAME, workspace)
    }

    /// The connector under another global name (`db`, `files`, …).
    pub fn named(name: impl Into<String>, workspace: Workspace) -> Self {
        StateConnector {
            name: name.into(),
            workspace,
        }
    }

    /// The workspace it serves.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }
}

#[async_trait]
impl Connector for StateConnector {
    fn name(&self) -> &str {
        &self.name
    }

    fn positional_args(&self) -> bool {
        true
    }

    fn instructions(&self) -> Option<String> {
        let o = self.workspace.options();
        Some(format!(
            "Durable text files in workspace {:?} (quota {} bytes, at most {} bytes a file). \
             Keep large data here instead of returning it: write the records with writeJson or \
             appendFile and return a summary and the path. Files survive across executions; \
             writes need no approval and are undone by a rollback.",
            o.workspace, o.quota_bytes, o.max_file_bytes
        ))
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let content = (
            "content",
            json!({"type": "string", "description": "The text."}),
        );
        vec![
            tool("readFile", "Reads a file's text.", schema(&[path_prop(PATH)]), false),
            tool("readJson", "Reads a file and parses it as JSON.", schema(&[path_prop(PATH)]), false),
            tool(
                "writeFile",
                "Creates or replaces a file with the text. Returns {path, bytes, existed}.",
                schema(&[path_prop(PATH), content.clone()]),
                true,
            ),
            tool(
                "writeJson",
                "Creates or replaces a file with the value as JSON. Returns {path, bytes, existed}.",
                schema(&[path_prop(PATH), ("value", json!({"description": "Any JSON value."}))]),
                true,
            ),
            tool(
                "appendFile",
                "Adds the text at the end of a file, creating it when absent (e.g. one JSON line per record). Returns {path, bytes, existed}.",
                schema(&[path_prop(PATH), content]),
                true,
            ),
            tool(
                "list",
                "Lists the files and directories directly in a directory: {entries: [{name, path, type, size, updatedAt}], total, truncated, note?}.",
                schema(&[("dir", json!({"type": "string", "description": "Absolute directory path; / for the root."}))]),
                false,
            ),
            tool(
                "glob",
                "Paths of the files matching a pattern (`*` within a segment, `?` one character, `**` any depth): {entries: [path], total, truncated, note?}.",
                schema(&[("pattern", json!({"type": "string", "description": "e.g. /data/**/*.json"}))]),
                false,
            ),
            tool(
                "stat",
                "What is at a path: {path, type: 'file'|'directory', size, updatedAt}, or null when nothing is.",
                schema(&[path_prop(PATH)]),
                false,
            ),
            tool(
                "remove",
                "Removes a file (not a directory). Returns {path, bytes: 0, existed}.",
                schema(&[path_prop(PATH)]),
                true,
            ),
        ]
    }

    async fn execute(
        &self,
        method: &str,
        args: Value,
        ctx: CallContext,
    ) -> Result<Value, ToolError> {
        let ws = &self.workspace;
        let key = Some(ctx.idempotency_key());
        match method {
            "readFile" => Ok(Value::String(ws.read_text(&text(&args, "path")?).await.map_err(out)?)),
            "readJson" => ws.read_json(&text(&args, "path")?).await.map_err(out),
            "writeFile" => {
                let op = FileOp::Write(text(&args, "content")?);
                to_json(ws.change(&text(&args, "path")?, op, key).await.map_err(out)?)
            }
            "appendFile" => {
                let op = FileOp::Append(text(&args, "content")?);
                to_json(ws.change(&text(&args, "path")?, op, key).await.map_err(out)?)
            }
            "writeJson" => {
                let value = args.get("value").cloned().unwrap_or(Value::Null);
                to_json(ws.write_json(&text(&args, "path")?, &value, key).await.map_err(out)?)
            }
            "remove" => to_json(ws.change(&text(&args, "path")?, FileOp::Remove, key).await.map_err(out)?),
            "list" => to_json(ws.list(&text(&args, "dir")?).await.map_err(out)?),
            "glob" => to_json(ws.glob(&text(&args, "pattern")?).await.map_err(out)?),
            "stat" => to_json(ws.stat(&text(&args, "path")?).await.map_err(out)?),
            other => Err(ToolError::new(format!(
                "{} has no method {other}; its methods are readFile, writeFile, readJson, writeJson, appendFile, list, glob, stat, remove",
                self.name
            ))),
        }
    }

    async fn revert(
        &self,
        method: &str,
        _args: Value,
        _result: Value,
        ctx: CallContext,
    ) -> Result<(), ToolError> {
        match method {
            "writeFile" | "writeJson" | "appendFile" | "remove" => {
                self.workspace
                    .revert(&ctx.idempotency_key())
                    .await
                    .map_err(out)?;
                Ok(())
            }
            other => Err(ToolError::new(format!(
                "{other} changes nothing, so there is nothing to revert"
            ))),
        }
    }
}
