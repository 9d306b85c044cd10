//! From a server's tool list to the connector's methods: names, approval, reverts, and the
//! tools left out (with the reason) rather than failing the whole connector.

use crate::config::McpConfig;
use crate::error::{allow_hint, Cause, RECURSION};
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

/// Whether `tool` takes code to run: named like a code runner (`codemode`, `code`,
/// `run_code`, `execute_code`, `eval`, `run_script`, `exec_js`…), or its input has a string
/// property `code` or `script`, required or not. Such a tool would let the sandbox's code run
/// code, in that server, past the runtime's log and approvals.
pub fn is_code_tool(tool: &Tool) -> bool {
    is_code_tool_name(&tool.name) || has_code_property(&Value::Object((*tool.input_schema).clone()))
}

/// Whether a tool's name is a code runner's: letters and digits only, in lower case.
fn is_code_tool_name(name: &str) -> bool {
    let folded: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if folded.contains("codemode") || matches!(folded.as_str(), "code" | "eval" | "exec") {
        return true;
    }
    let verbs = ["run", "exec", "execute", "eval", "evaluate", "interpret"];
    let objects = [
        "code",
        "script",
        "js",
        "javascript",
        "typescript",
        "ts",
        "python",
        "snippet",
    ];
    verbs.iter().any(|verb| {
        folded
            .strip_prefix(verb)
            .is_some_and(|rest| objects.contains(&rest))
    })
}

/// Whether an input schema has a property `code` or `script` that may be a string.
fn has_code_property(schema: &Value) -> bool {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return false;
    };
    ["code", "script"].iter().any(|key| {
        properties.get(*key).is_some_and(|p| match p.get("type") {
            None => true,
            Some(Value::String(t)) => t == "string",
            Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
            Some(_) => false,
        })
    })
}

/// Builds the methods for `listed`; only a wrong configuration, or a server whose only tools
/// are code tools (unless `allow_code_tools`), is an error.
pub fn build(listed: &[Tool], config: &McpConfig) -> Result<Methods, Cause> {
    let mut warnings = Vec::new();
    let mut usable: Vec<&Tool> = Vec::with_capacity(listed.len());
    let refused = |t: &Tool| !config.allow_code_tools && is_code_tool(t);
    let code_tools: Vec<&Tool> = listed.iter().filter(|t| refused(t)).collect();
    if !code_tools.is_empty() && code_tools.len() == listed.len() {
        let names: Vec<String> = code_tools.iter().map(|t| format!("{:?}", t.name)).collect();
        return Err(Cause::Recursive {
            tools: names.join(", "),
            connector: config.settings.name.clone(),
        });
    }
    for tool in listed {
        if refused(tool) {
            warnings.push(format!(
                "tool {:?} is left out: {RECURSION}{}",
                tool.name,
                allow_hint(&config.settings.name)
            ));
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
    let mut rules: Vec<RevertRule> = Vec::with_capacity(config.settings.reverts.len());
    for rule in &config.settings.reverts {
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
                .settings
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
    let unused = apply_overrides(&mut tools, &config.settings.tools, |m| {
        originals.get(m).cloned()
    })
    .map_err(Cause::Override)?;
    warnings.extend(unused);
    Ok(Methods {
        tools,
        originals,
        reverts,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_code_tool_is_known_by_its_name_or_a_code_property() {
        let empty = json!({"type": "object"});
        for name in [
            "codemode",
            "code",
            "run_code",
            "execute_code",
            "runCode",
            "eval",
            "run-script",
            "exec_js",
            "execute_python",
        ] {
            assert!(is_code_tool(&tool(name, empty.clone())), "{name}");
        }
        for name in [
            "search_code",
            "list_tasks",
            "get_issue",
            "codec_info",
            "run_tests",
        ] {
            assert!(!is_code_tool(&tool(name, empty.clone())), "{name}");
        }
        // The property, required or not, typed as a string or not typed.
        let code = json!({"type": "object", "properties": {"code": {"type": "string"}}});
        let script = json!({"type": "object", "properties": {"script": {}}, "required": []});
        let either =
            json!({"type": "object", "properties": {"code": {"type": ["string", "null"]}}});
        let number = json!({"type": "object", "properties": {"code": {"type": "integer"}}});
        assert!(is_code_tool(&tool("execute", code)));
        assert!(is_code_tool(&tool("go", script)));
        assert!(is_code_tool(&tool("go", either)));
        assert!(!is_code_tool(&tool("status", number)));
    }
}
