//! The `codemode` SDK calls that are not logged: search, describe and run.

use super::registry::Registry;
use super::Runtime;
use crate::discovery::{Catalog, ConnectorInfo};
use crate::error::RuntimeError;
use crate::executor::{HostCall, HostReply};
use serde_json::{json, Value};

/// Builds the discovery catalogue from the registered connectors.
pub(super) fn build_catalog(
    registry: &Registry,
    hints: &[(String, String)],
) -> Result<Catalog, RuntimeError> {
    let infos = registry
        .names
        .iter()
        .map(|name| {
            let c = &registry.connectors[name];
            ConnectorInfo {
                name: name.clone(),
                instructions: c.connector.instructions(),
                tools: c.order.iter().map(|t| c.tools[t].spec.clone()).collect(),
                hint: hints
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, h)| h.clone()),
            }
        })
        .collect();
    Catalog::new(infos).map_err(|e| RuntimeError::InvalidConnector(e.to_string()))
}

/// Answers `codemode.search`, `codemode.describe` and `codemode.run` from inside a pass.
pub(super) async fn answer(runtime: &Runtime, call: &HostCall) -> HostReply {
    let inner = &runtime.inner;
    let text = |key: &str| {
        call.args
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let snippets = match inner.store.snippets(&inner.name).await {
        Ok(s) => s,
        Err(e) => return HostReply::Throw(format!("codemode.{}: {e}", call.method)),
    };
    match call.method.as_str() {
        "search" => match text("query") {
            Some(q) => HostReply::Value(
                serde_json::to_value(inner.catalog.search(&q, &snippets)).unwrap_or(Value::Null),
            ),
            None => HostReply::Throw("codemode.search(query) needs a string query".into()),
        },
        "describe" => match text("target") {
            Some(t) => match inner.catalog.describe(&t, &snippets) {
                Ok(d) => HostReply::Value(serde_json::to_value(d).unwrap_or(Value::Null)),
                Err(message) => HostReply::Throw(message),
            },
            None => HostReply::Throw(
                "codemode.describe(target) needs a string: a connector, connector.method or a snippet name".into(),
            ),
        },
        _ => {
            let Some(name) = text("name") else {
                return HostReply::Throw("codemode.run(name, input) needs a snippet name".into());
            };
            let input = call.args.get("input").cloned().unwrap_or(Value::Null);
            run_snippet(runtime, &name, input, &snippets)
        }
    }
}

fn run_snippet(
    runtime: &Runtime,
    name: &str,
    input: Value,
    snippets: &[crate::model::Snippet],
) -> HostReply {
    let Some(snippet) = snippets.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = snippets.iter().map(|s| s.name.as_str()).collect();
        return HostReply::Value(json!({
            "error": format!(
                "no snippet named {name:?}; saved snippets: {}",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )
        }));
    };
    let missing = runtime.inner.registry.missing(&snippet.connectors);
    if !missing.is_empty() {
        return HostReply::Value(json!({
            "error": format!(
                "snippet {name:?} needs connector(s) {} which this runtime does not have",
                missing.join(", ")
            )
        }));
    }
    if let Some(schema) = &snippet.input_schema {
        if let Err(message) = super::control::validate_snippet_input(name, schema, &input) {
            return HostReply::Value(json!({ "error": message }));
        }
    }
    HostReply::RunCode {
        code: snippet.code.clone(),
        input,
    }
}

impl Runtime {
    /// The tool to hand the model: name, description and input schema.
    pub fn tool(&self) -> crate::discovery::ToolDefinition {
        self.inner.catalog.tool_definition()
    }

    /// Ranked search over connector methods and snippets, as `codemode.search` answers.
    pub async fn search(
        &self,
        query: &str,
    ) -> Result<crate::discovery::SearchOutput, RuntimeError> {
        let snippets = self.inner.store.snippets(&self.inner.name).await?;
        Ok(self.inner.catalog.search(query, &snippets))
    }

    /// TypeScript declarations for a target, as `codemode.describe` answers.
    pub async fn describe(
        &self,
        target: &str,
    ) -> Result<Result<crate::discovery::DescribeOutput, String>, RuntimeError> {
        let snippets = self.inner.store.snippets(&self.inner.name).await?;
        Ok(self.inner.catalog.describe(target, &snippets))
    }

    /// The connectors with their instructions, hints and tool specs (approval, revert, schemas).
    pub fn connectors(&self) -> &[ConnectorInfo] {
        self.inner.catalog.connectors()
    }

    /// Every declaration the sandbox offers.
    pub fn types(&self) -> String {
        self.inner.catalog.types()
    }
}
