//! From a server's tool list to the connector's methods: names, approval, reverts, and the
//! tools left out (with the reason) rather than failing the whole connector.

use crate::config::McpConfig;
use crate::error::{Cause, RECURSION};
use crate::names::method_names;
use codemode::policy::{apply_overrides, RevertRule, RevertSet};
use codemode::{ReplayPolicy, ToolSpec};
use rmcp::model::Tool;
use serde_json::Value;
use std::collections::HashMap;

/// The methods of one connector.
pub struct Methods {
    /// What the runtime registers.
    pub tools: Vec<ToolSpec>,
    /// Method name to the tool's name on the server.
    pub originals: HashMap<String, String>,
    /// Compensating calls.
    pub reverts: RevertSet,
    /// Tools renamed or left out, and configuration that matched nothing.
    pub warnings: Vec<String>,
}

/// Whether the server names itself as a Code Mode server in its initialize info.
fn is_codemode_server(server_name: Option<&str>) -> bool {
    matches!(server_name, Some("codemode" | "codemode-openapi"))
}

/// Whether `tool` is another Code Mode server's code tool: the only required property of its
/// input is `code`, and it is called `codemode` or its server is a Code Mode server.
fn is_code_tool(tool: &Tool, codemode_server: bool) -> bool {
    let only_code = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.len() == 1 && r[0] == "code");
    only_code && (tool.name == "codemode" || codemode_server)
}

/// Builds the methods for `listed` (from the server called `server_name` in its initialize
/// info); only a wrong configuration, or a server whose only tools are code tools, is an error.
pub fn build(
    listed: &[Tool],
    config: &McpConfig,
    server_name: Option<&str>,
) -> Result<Methods, Cause> {
    let mut warnings = Vec::new();
    let mut usable: Vec<&Tool> = Vec::with_capacity(listed.len());
    let codemode_server = is_codemode_server(server_name);
    let code_tools: Vec<&Tool> = listed
        .iter()
        .filter(|t| is_code_tool(t, codemode_server))
        .collect();
    if !code_tools.is_empty() && code_tools.len() == listed.len() {
        let names: Vec<String> = code_tools.iter().map(|t| format!("{:?}", t.name)).collect();
        return Err(Cause::Recursive(names.join(", ")));
    }
    for tool in listed {
        if is_code_tool(tool, codemode_server) {
            warnings.push(format!("tool {:?} is left out: {RECURSION}", tool.name));
            continue;
        }
        let schema = Value::Object((*tool.input_schema).clone());
        match jsonschema::validator_for(&schema) {
            Ok(_) => usable.push(tool),
            Err(e) => warnings.push(format!(
                "tool {:?} is left out: its input schema is not valid JSON Schema ({e})",
                tool.name
            )),
        }
    }
    let names: Vec<String> = usable.iter().map(|t| t.name.to_string()).collect();
    let naming = method_names(&names, &config.rename)?;
    warnings.extend(naming.warnings);
    let named: Vec<(&Tool, String)> = usable
        .into_iter()
        .zip(naming.methods)
        .filter_map(|(tool, method)| Some((tool, method?)))
        .collect();

    let resolve = |n: &str| -> Option<String> {
        named
            .iter()
            .find(|(t, m)| t.name == n || m.as_str() == n)
            .map(|(_, m)| m.clone())
    };
    let left_out = |n: &str| resolve(n).is_none() && listed.iter().any(|t| t.name == n);
    let mut rules: Vec<RevertRule> = Vec::with_capacity(config.reverts.len());
    for rule in &config.reverts {
        match [&rule.tool, &rule.revert].into_iter().find(|n| left_out(n)) {
            Some(missing) => warnings.push(format!(
                "the revert rule for {:?} is not used: tool {missing:?} is left out",
                rule.tool
            )),
            None => rules.push(rule.clone()),
        }
    }
    let reverts = RevertSet::build(&rules, resolve).map_err(Cause::Revert)?;

    let mut tools = Vec::with_capacity(named.len());
    let mut originals = HashMap::with_capacity(named.len());
    for (tool, method) in named {
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let original = tool.name.to_string();
        tools.push(ToolSpec {
            name: method.clone(),
            description: tool
                .description
                .as_ref()
                .map(|d| d.to_string())
                .or_else(|| tool.title.clone()),
            input_schema: Value::Object((*tool.input_schema).clone()),
            output_schema: tool
                .output_schema
                .as_ref()
                .map(|s| Value::Object((**s).clone())),
            requires_approval: config
                .approval
                .requires_approval(&[&original, &method], read_only),
            read_only,
            replay: ReplayPolicy::Log,
            has_revert: reverts.has(&method),
            http: None,
            result_shape: None,
        });
        originals.insert(method, original);
    }
    let unused = apply_overrides(&mut tools, &config.tools, |m| originals.get(m).cloned())
        .map_err(Cause::Override)?;
    warnings.extend(unused);
    Ok(Methods {
        tools,
        originals,
        reverts,
        warnings,
    })
}
