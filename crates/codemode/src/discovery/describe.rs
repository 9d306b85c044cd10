//! `describe`: TypeScript declarations for a connector, a method or a snippet.

use super::catalog::{Catalog, MethodEntry};
use super::doc_comment::{clip, render_doc};
use super::tokens::tokenize;
use super::typescript::{type_name_from, TypeScriptBuilder};
use crate::model::Snippet;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;

/// Longest method description kept in a method's declarations, in characters.
const MAX_METHOD_DOC_CHARS: usize = 2_000;
/// How many close paths an unknown target's error suggests.
const MAX_SUGGESTIONS: usize = 5;

/// What was described.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DescribeKind {
    /// A whole connector: all its methods.
    Connector,
    /// One method.
    Method,
    /// A saved snippet.
    Snippet,
}

/// What `codemode.describe(target)` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeOutput {
    /// The connector name, `connector.method`, or the snippet name.
    pub path: String,
    /// Connector instructions, the method's description, or the snippet's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// TypeScript declarations.
    pub types: String,
    /// What the path names.
    pub kind: DescribeKind,
}

/// Declarations of the platform SDK, the `codemode` global.
pub const SDK_DECLARATIONS: &str = r#"type SearchOutput = { results: { path: string; connector: string; method: string; description?: string; kind: "method" | "snippet"; requiresApproval: boolean; score: number }[]; total: number; truncated: boolean; note?: string };
type DescribeOutput = { path: string; description?: string; types: string; kind: "connector" | "method" | "snippet" };
declare const codemode: {
  /** Ranked connector methods and saved snippets for a few words (at most 50). */
  search(query: string): Promise<SearchOutput>;
  /** TypeScript declarations for a connector, "connector.method", or a snippet name. */
  describe(target: string): Promise<DescribeOutput>;
  /** Runs fn once and records its result; replays return the recorded value. */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** Runs a saved snippet; a missing snippet or connector resolves to { error }. */
  run(name: string, input?: unknown): Promise<unknown>;
};
"#;

/// Type names chosen for one method.
struct MethodNames {
    input: String,
    output: Option<String>,
}

impl Catalog {
    /// Declarations for `target`: a connector name, `connector.method`, a method name found in
    /// only one connector, or a snippet name. An unknown target's error names the closest paths.
    pub fn describe(&self, target: &str, snippets: &[Snippet]) -> Result<DescribeOutput, String> {
        let target = target.trim();
        let target = target.strip_suffix("()").unwrap_or(target).trim();
        if target.is_empty() {
            return Err(format!(
                "describe needs a target: a connector name, \"connector.method\" or a snippet name. Connectors: {}.",
                self.connector_list()
            ));
        }
        if let Some(&c) = self.by_connector.get(target) {
            let connector = &self.connectors[c];
            let methods: Vec<&MethodEntry> =
                self.methods.iter().filter(|m| m.connector == c).collect();
            return Ok(DescribeOutput {
                path: connector.name.clone(),
                description: connector.instructions.clone(),
                types: self.connector_types(c, &methods, false),
                kind: DescribeKind::Connector,
            });
        }
        if let Some(&m) = self.by_path.get(target) {
            return Ok(self.describe_method(&self.methods[m]));
        }
        if let Some(snippet) = snippets.iter().find(|s| s.name == target) {
            return Ok(describe_snippet(snippet));
        }
        if let Some(found) = self.by_method_name.get(target) {
            match found.as_slice() {
                [m] => return Ok(self.describe_method(&self.methods[*m])),
                many => {
                    let paths: Vec<&str> = many
                        .iter()
                        .map(|&m| self.methods[m].path.as_str())
                        .collect();
                    return Err(format!(
                        "{target:?} is a method of several connectors: {}. Describe one of these paths.",
                        paths.join(", ")
                    ));
                }
            }
        }
        Err(self.unknown_target(target, snippets))
    }

    /// Every declaration: the `codemode` SDK, then each connector's methods and types.
    pub fn types(&self) -> String {
        self.all_types
            .get_or_init(|| {
                let mut out = String::from(SDK_DECLARATIONS);
                for c in 0..self.connectors.len() {
                    let methods: Vec<&MethodEntry> =
                        self.methods.iter().filter(|m| m.connector == c).collect();
                    out.push('\n');
                    out.push_str(&self.connector_types(c, &methods, true));
                }
                out
            })
            .clone()
    }

    fn describe_method(&self, method: &MethodEntry) -> DescribeOutput {
        let tool = self.tool_of(method);
        DescribeOutput {
            path: method.path.clone(),
            description: tool.description.clone(),
            types: self.connector_types(method.connector, &[method], true),
            kind: DescribeKind::Method,
        }
    }

    /// Input and output types of `methods`, then `declare const <connector>: { … }`.
    ///
    /// With `full_docs`, each method carries its whole description; otherwise its summary.
    fn connector_types(&self, c: usize, methods: &[&MethodEntry], full_docs: bool) -> String {
        let connector = &self.connectors[c];
        let mut builder = TypeScriptBuilder::new();
        let names: Vec<MethodNames> = methods
            .iter()
            .map(|m| {
                let tool = self.tool_of(m);
                let base = type_name_from(&tool.name);
                MethodNames {
                    input: builder.unique_name(&format!("{base}Input")),
                    output: tool
                        .output_schema
                        .as_ref()
                        .map(|_| builder.unique_name(&format!("{base}Output"))),
                }
            })
            .collect();
        let mut members = String::new();
        for (method, names) in methods.iter().zip(&names) {
            let tool = self.tool_of(method);
            builder.declare(&names.input, &tool.input_schema, &tool.input_schema);
            if let (Some(output), Some(schema)) = (&names.output, &tool.output_schema) {
                builder.declare(output, schema, schema);
            }
            let mut doc: Vec<String> = if full_docs {
                tool.description
                    .as_deref()
                    .map(|d| {
                        clip(d.trim(), MAX_METHOD_DOC_CHARS)
                            .lines()
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                method.summary.iter().cloned().collect()
            };
            if tool.requires_approval {
                doc.push(
                    "Requires approval: the run pauses here until a person approves.".to_string(),
                );
            }
            members.push_str(&render_doc(&doc, "  "));
            let optional = if input_is_optional(&tool.input_schema) {
                "?"
            } else {
                ""
            };
            members.push_str(&format!(
                "  {}(input{optional}: {}): Promise<{}>;\n",
                tool.name,
                names.input,
                names.output.as_deref().unwrap_or("unknown")
            ));
        }
        let instructions: Vec<String> = connector
            .instructions
            .as_deref()
            .map(|i| i.trim().lines().map(str::to_string).collect())
            .unwrap_or_default();
        builder.push_text(&render_doc(&instructions, ""));
        builder.push_text(&format!(
            "declare const {}: {{\n{members}}};\n",
            connector.name
        ));
        builder.finish()
    }

    fn connector_list(&self) -> String {
        if self.connectors.is_empty() {
            return "none".to_string();
        }
        self.connectors
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The error for a target that names nothing, with the closest paths.
    fn unknown_target(&self, target: &str, snippets: &[Snippet]) -> String {
        let candidates = self
            .connectors
            .iter()
            .map(|c| c.name.as_str())
            .chain(self.methods.iter().map(|m| m.path.as_str()))
            .chain(snippets.iter().map(|s| s.name.as_str()));
        let wanted = target.to_lowercase();
        let wanted_words: HashSet<String> = tokenize(target).into_iter().collect();
        let wanted_method = wanted.rsplit('.').next().unwrap_or(&wanted).to_string();
        let mut scored: Vec<(f64, &str)> = candidates
            .map(|path| {
                let lower = path.to_lowercase();
                let method = lower.rsplit('.').next().unwrap_or(&lower);
                let words: HashSet<String> = tokenize(path).into_iter().collect();
                let shared = wanted_words.intersection(&words).count() as f64;
                let overlap = shared / (wanted_words.union(&words).count().max(1) as f64);
                let similarity =
                    similarity(&wanted, &lower).max(similarity(&wanted_method, method));
                (overlap.max(similarity), path)
            })
            .filter(|(score, _)| *score >= 0.3)
            .collect();
        scored.sort_by(|(a, pa), (b, pb)| b.total_cmp(a).then_with(|| pa.cmp(pb)));
        let closest: Vec<&str> = scored
            .iter()
            .take(MAX_SUGGESTIONS)
            .map(|(_, p)| *p)
            .collect();
        let mut message = format!("no connector, method or snippet is named {target:?}.");
        if closest.is_empty() {
            message.push_str(&format!(" Connectors: {}.", self.connector_list()));
        } else {
            message.push_str(&format!(" Closest: {}.", closest.join(", ")));
        }
        message.push_str(" Use codemode.search(\"a few words\") to find methods.");
        message
    }
}

/// Whether a method's input may be left out: its schema requires no property.
fn input_is_optional(schema: &Value) -> bool {
    match schema {
        Value::Object(obj) => {
            !obj.contains_key("$ref")
                && obj
                    .get("required")
                    .and_then(Value::as_array)
                    .is_none_or(|r| r.is_empty())
        }
        _ => true,
    }
}

fn describe_snippet(snippet: &Snippet) -> DescribeOutput {
    let mut builder = TypeScriptBuilder::new();
    let input = match &snippet.input_schema {
        Some(schema) => {
            let name = builder.unique_name(&format!("{}Input", type_name_from(&snippet.name)));
            builder.declare(&name, schema, schema);
            let optional = if input_is_optional(schema) { "?" } else { "" };
            format!("input{optional}: {name}")
        }
        None => "input?: unknown".to_string(),
    };
    let mut doc: Vec<String> = snippet
        .description
        .trim()
        .lines()
        .map(str::to_string)
        .collect();
    doc.push(format!(
        "Run it with codemode.run({:?}, input).",
        snippet.name
    ));
    builder.push_text(&format!(
        "{}declare const codemode: {{ run(name: {:?}, {input}): Promise<unknown> }};\n",
        render_doc(&doc, ""),
        snippet.name
    ));
    DescribeOutput {
        path: snippet.name.clone(),
        description: Some(snippet.description.clone()).filter(|d| !d.is_empty()),
        types: builder.finish(),
        kind: DescribeKind::Snippet,
    }
}

/// 1 minus the edit distance over the longer length: 1 for equal strings, 0 for unrelated ones.
fn similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    1.0 - previous[b.len()] as f64 / longest as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connector::ToolSpec;
    use crate::discovery::ConnectorInfo;
    use serde_json::json;

    fn catalog() -> Catalog {
        let mut list = ToolSpec::new("list_pull_requests");
        list.description = Some("List pull requests.".to_string());
        list.requires_approval = false;
        list.input_schema = json!({"type": "object", "properties": {"owner": {"type": "string"}, "state": {"enum": ["open", "closed"]}}, "required": ["owner"]});
        list.output_schema = Some(
            json!({"type": "array", "items": {"type": "object", "properties": {"number": {"type": "integer"}}}}),
        );
        let mut merge = ToolSpec::new("merge_pull_request");
        merge.description = Some("Merge a pull request.".to_string());
        let mut github = ConnectorInfo::new("github", vec![list, merge]);
        github.instructions = Some("Use owner/repo.".to_string());
        Catalog::new(vec![
            github,
            ConnectorInfo::new("slack", vec![ToolSpec::new("merge_pull_request")]),
        ])
        .unwrap()
    }

    #[test]
    fn describes_a_method() {
        let out = catalog()
            .describe("github.list_pull_requests", &[])
            .unwrap();
        assert_eq!(out.kind, DescribeKind::Method);
        assert_eq!(
            out.types,
            "type ListPullRequestsInput = { owner: string; state?: \"open\" | \"closed\" };\ntype ListPullRequestsOutput = { number?: number }[];\n/** Use owner/repo. */\ndeclare const github: {\n  /** List pull requests. */\n  list_pull_requests(input: ListPullRequestsInput): Promise<ListPullRequestsOutput>;\n};\n"
        );
    }

    #[test]
    fn describes_a_connector() {
        let out = catalog().describe("github", &[]).unwrap();
        assert_eq!(out.kind, DescribeKind::Connector);
        assert_eq!(out.description.as_deref(), Some("Use owner/repo."));
        assert!(
            out.types
                .contains("merge_pull_request(input?: MergePullRequestInput): Promise<unknown>;"),
            "{}",
            out.types
        );
        assert!(out.types.contains("Requires approval"));
    }

    #[test]
    fn bare_method_names() {
        let c = catalog();
        assert_eq!(
            c.describe("list_pull_requests()", &[]).unwrap().path,
            "github.list_pull_requests"
        );
        let err = c.describe("merge_pull_request", &[]).unwrap_err();
        assert!(
            err.contains("github.merge_pull_request") && err.contains("slack.merge_pull_request"),
            "{err}"
        );
    }

    #[test]
    fn unknown_targets_suggest_close_paths() {
        let c = catalog();
        let err = c.describe("github.list_pulls", &[]).unwrap_err();
        assert!(err.contains("Closest: github.list_pull_requests"), "{err}");
        let err = c.describe("", &[]).unwrap_err();
        assert!(err.contains("Connectors: github, slack"), "{err}");
        let err = c.describe("zzzzzzzzzzzzzzzzzzzz", &[]).unwrap_err();
        assert!(err.contains("no connector, method or snippet"), "{err}");
    }

    #[test]
    fn similarity_is_normalised_edit_distance() {
        assert_eq!(similarity("abc", "abc"), 1.0);
        assert_eq!(similarity("", ""), 1.0);
        assert!((similarity("kitten", "sitting") - (1.0 - 3.0 / 7.0)).abs() < 1e-9);
    }
}
