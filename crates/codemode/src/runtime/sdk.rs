//! The `codemode` SDK calls that are not logged: search, describe and run.

use super::registry::Registry;
use super::Runtime;
use crate::discovery::{
    code_input_schema, Catalog, ConnectorInfo, ToolDefinition, DEFAULT_DESCRIPTION_TOKENS,
    TOOL_NAME,
};
use crate::error::RuntimeError;
use crate::executor::{HostCall, HostReply};
use serde_json::{json, Value};

/// Builds the discovery catalogue from the registered connectors.
pub(crate) fn build_catalog(
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
                positional: c.connector.positional_args(),
                types: c.connector.types(),
            }
        })
        .collect();
    Catalog::new(infos)
        .map(|c| c.with_unavailable(registry.unavailable.clone()))
        .map_err(|e| RuntimeError::InvalidConnector(e.to_string()))
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
            Some(t) => match crate::discovery::DescribeOptions::from_args(&call.args)
                .and_then(|o| inner.catalog.describe_with(&t, &snippets, o))
            {
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
            let chain = caller_chain(&call.args);
            if let Some(message) = nesting_refusal(&chain, &name, inner.max_snippet_depth) {
                return HostReply::Throw(message);
            }
            run_snippet(runtime, &name, input, &snippets)
        }
    }
}

/// The snippets running, outermost first, when the code called `codemode.run`: the executor
/// sends them as `chain`, worked out from where the call was made (never from the code).
fn caller_chain(args: &Value) -> Vec<String> {
    args.get("chain")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Why running `name` from inside `chain` is refused: the snippet is already running (it
/// would run itself) or the nesting is past the limit.
pub(crate) fn nesting_refusal(chain: &[String], name: &str, max_depth: usize) -> Option<String> {
    let path = || {
        let mut all: Vec<&str> = chain.iter().map(String::as_str).collect();
        all.push(name);
        all.join(" -> ")
    };
    if let Some(first) = chain.iter().position(|n| n == name) {
        let cycle: Vec<&str> = chain[first..]
            .iter()
            .map(String::as_str)
            .chain([name])
            .collect();
        return Some(format!(
            "codemode.run({name:?}) refused: snippet {} runs itself, which would never end; \
             call the connectors directly or loop inside one snippet instead of recursing",
            cycle.join(" -> ")
        ));
    }
    if chain.len() >= max_depth {
        return Some(format!(
            "codemode.run({name:?}) refused: snippets nest {} deep ({}), past the limit of \
             {max_depth}; run fewer snippets from inside snippets",
            chain.len() + 1,
            path()
        ));
    }
    None
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

/// How the `codemode` tool is described: options of [`Runtime::tool_with`] and of
/// [`crate::CodeToolBuilder::tool_options`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOptions {
    /// A description replacing the generated one; `{{types}}` becomes every declaration and
    /// `{{example}}` an example program.
    pub description: Option<String>,
    /// The token budget of the generated description (default
    /// [`DEFAULT_DESCRIPTION_TOKENS`]): connectors' declarations are put in, each whole, only
    /// while the description fits it. A replaced description is not cut.
    pub max_description_tokens: Option<usize>,
}

/// The program `{{example}}` stands for in a replaced tool description.
pub const TOOL_EXAMPLE: &str = "async () => {\n  const found = await codemode.search(\"create issue comment\");\n  const docs = await codemode.describe(found.results[0].path);\n  return { found: found.results.slice(0, 5), types: docs.types };\n}";

/// The tool over `catalog` as `options` describe it: the template filled, or the generated
/// description within the budget. Shared by the durable runtime and the stateless code tool.
pub(crate) fn tool_definition(
    catalog: &Catalog,
    options: &ToolOptions,
) -> Result<ToolDefinition, RuntimeError> {
    let budget = options
        .max_description_tokens
        .unwrap_or(DEFAULT_DESCRIPTION_TOKENS);
    let Some(template) = &options.description else {
        return Ok(catalog.tool_definition_within(budget));
    };
    Ok(ToolDefinition {
        name: TOOL_NAME.to_string(),
        description: fill_template(template, &catalog.types())?,
        input_schema: code_input_schema(),
    })
}

/// Fills a description template's placeholders, or names the first unknown one.
pub(crate) fn fill_template(template: &str, types: &str) -> Result<String, RuntimeError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        match rest[start + 2..start + 2 + len].trim() {
            "types" => out.push_str(types),
            "example" => out.push_str(TOOL_EXAMPLE),
            other => {
                return Err(RuntimeError::InvalidConfig(format!(
                    "the tool description names the placeholder {{{{{other}}}}}, which does not exist; the allowed placeholders are {{{{types}}}} and {{{{example}}}}"
                )))
            }
        }
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Runtime {
    /// The tool to hand the model: name, description (within
    /// [`DEFAULT_DESCRIPTION_TOKENS`]) and input schema.
    pub fn tool(&self) -> ToolDefinition {
        self.inner.catalog.tool_definition()
    }

    /// [`Runtime::tool`] with options: a replaced description fills `{{types}}` and
    /// `{{example}}` (any other placeholder is an error naming it and the allowed ones); the
    /// generated one keeps to `max_description_tokens`.
    pub fn tool_with(&self, options: ToolOptions) -> Result<ToolDefinition, RuntimeError> {
        tool_definition(&self.inner.catalog, &options)
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
