//! The GitHub REST description (`@octokit/openapi`, 1,223 operations) as discovery sees it:
//! one tool per operation, with its HTTP method and path. Included by the discovery tests and
//! by the benchmark `benches/discovery.rs`.

#![allow(dead_code)]

use codemode::connector::HttpOperation;
use codemode::discovery::{bundle_refs, resolve_ref, sanitize_tool_names, ConnectorInfo};
use codemode::ToolSpec;
use serde_json::{json, Map, Value};
use std::path::PathBuf;

/// Operations in `api.github.com.json` of the pinned `@octokit/openapi`.
pub const GITHUB_OPERATIONS: usize = 1_223;

const HTTP_METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Where `npm ci` in `fixtures/` puts the GitHub description.
pub fn github_spec_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/node_modules/@octokit/openapi/generated/api.github.com.json")
}

/// The GitHub description, or `None` (after a loud notice) when the fixture is not installed.
///
/// Under CI (`CI` set) a missing fixture is a failure, not a skip.
pub fn load_github_spec() -> Option<Value> {
    let path = github_spec_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) => {
            let message = format!("the GitHub OpenAPI fixture ({}: {err})", path.display());
            codemode_testkit::missing(&message, "run `npm ci` in fixtures/");
            return None;
        }
    };
    Some(serde_json::from_str(&text).expect("the GitHub OpenAPI fixture is valid JSON"))
}

fn resolved<'a>(spec: &'a Value, value: &'a Value) -> &'a Value {
    let mut value = value;
    for _ in 0..8 {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => match resolve_ref(spec, reference) {
                Some(target) => value = target,
                None => return value,
            },
            None => return value,
        }
    }
    value
}

/// One tool per operation: input = path and query parameters plus the JSON body (its
/// properties merged in when it is an object, else under `body`); output = the 200/201 JSON
/// response. Schemas are made self-contained with `bundle_refs` against the whole spec.
pub fn github_tools(spec: &Value) -> Vec<ToolSpec> {
    let mut operations = Vec::new();
    let empty = Map::new();
    let paths = spec["paths"].as_object().unwrap_or(&empty);
    for (path, item) in paths {
        let Some(item) = item.as_object() else {
            continue;
        };
        for (method, operation) in item {
            if HTTP_METHODS.contains(&method.as_str()) {
                operations.push((path, method, item, operation));
            }
        }
    }
    let ids: Vec<String> = operations
        .iter()
        .map(|(path, method, _, op)| {
            op["operationId"]
                .as_str()
                .map_or_else(|| format!("{method} {path}"), str::to_string)
        })
        .collect();
    let names = sanitize_tool_names(&ids).expect("GitHub operation ids sanitise to distinct names");
    operations
        .iter()
        .zip(names)
        .map(|((path, method, item, operation), name)| {
            let mut tool = ToolSpec::new(name);
            tool.http = Some(HttpOperation {
                method: method.to_uppercase(),
                path: path.to_string(),
            });
            let summary = operation["summary"].as_str().unwrap_or_default();
            let description = operation["description"].as_str().unwrap_or_default();
            tool.description = Some(format!("{summary}\n\n{description}").trim().to_string());
            tool.input_schema = bundle_refs(&input_schema(spec, item, operation), spec);
            tool.output_schema = output_schema(spec, operation).map(|s| bundle_refs(s, spec));
            tool.read_only = matches!(method.as_str(), "get" | "head");
            tool.requires_approval = !tool.read_only;
            tool
        })
        .collect()
}

fn input_schema(spec: &Value, item: &Map<String, Value>, operation: &Value) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let shared = item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let own = operation["parameters"].as_array().into_iter().flatten();
    for parameter in shared.chain(own) {
        let parameter = resolved(spec, parameter);
        let (Some(name), Some(location)) = (parameter["name"].as_str(), parameter["in"].as_str())
        else {
            continue;
        };
        if location != "path" && location != "query" {
            continue;
        }
        let mut schema = parameter.get("schema").cloned().unwrap_or(json!({}));
        if let (Some(obj), Some(text)) = (schema.as_object_mut(), parameter["description"].as_str())
        {
            obj.entry("description").or_insert_with(|| json!(text));
        }
        if parameter["required"] == json!(true) {
            required.push(json!(name));
        }
        properties.insert(name.to_string(), schema);
    }
    let body = resolved(spec, &operation["requestBody"]);
    if let Some(schema) = body["content"]["application/json"].get("schema") {
        let target = resolved(spec, schema);
        match target.get("properties").and_then(Value::as_object) {
            Some(body_properties) if target.get("type") != Some(&json!("array")) => {
                for (key, value) in body_properties {
                    properties
                        .entry(key.clone())
                        .or_insert_with(|| value.clone());
                }
                for key in target["required"].as_array().into_iter().flatten() {
                    if !required.contains(key) {
                        required.push(key.clone());
                    }
                }
            }
            _ => {
                properties.insert("body".to_string(), schema.clone());
                if body["required"] == json!(true) {
                    required.push(json!("body"));
                }
            }
        }
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

fn output_schema<'a>(spec: &'a Value, operation: &'a Value) -> Option<&'a Value> {
    ["200", "201"].iter().find_map(|status| {
        let response = resolved(spec, operation["responses"].get(*status)?);
        response["content"]["application/json"].get("schema")
    })
}

/// The GitHub connector as discovery sees it.
pub fn github_connector(spec: &Value) -> ConnectorInfo {
    let mut connector = ConnectorInfo::new("github", github_tools(spec));
    connector.hint =
        Some("GitHub REST API: repositories, issues, pull requests, actions, users".to_string());
    connector.instructions = Some("Pass owner and repo for repository methods.".to_string());
    connector
}

/// The size of listing every tool classically: the JSON of each name, description and input schema.
pub fn classic_listing_chars(tools: &[ToolSpec]) -> usize {
    let listing: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
        .collect();
    serde_json::to_string(&listing).map_or(0, |s| s.chars().count())
}

/// Drops comments and string literals, then checks `{}`, `()`, `[]` and `<>` pair up.
pub fn brackets_balance(types: &str) -> bool {
    let mut stack = Vec::new();
    let chars: Vec<char> = types.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '=' if chars.get(i + 1) == Some(&'>') => i += 1,
            open @ ('{' | '(' | '[' | '<') => stack.push(open),
            close @ ('}' | ')' | ']' | '>') => {
                let expected = match close {
                    '}' => '{',
                    ')' => '(',
                    ']' => '[',
                    _ => '<',
                };
                if stack.pop() != Some(expected) {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    stack.is_empty()
}
