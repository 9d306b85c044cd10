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
    /// The methods a glob such as `github.issues_*` matched.
    Methods,
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
    /// TypeScript declarations (for a large connector or a glob: a listing of its methods).
    pub types: String,
    /// What the path names.
    pub kind: DescribeKind,
    /// The page shown, when the answer is paged (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<usize>,
    /// How many pages there are, when the answer is paged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<usize>,
    /// What was left out or shortened, and how to ask for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Options of `codemode.describe(target, options)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DescribeOptions {
    /// The page of a connector's or glob's method listing (from 1).
    pub page: Option<usize>,
    /// A method's output type whole, however deep or large.
    pub full: bool,
    /// The answer's budget in tokens (default 6,000; clamped to 50..=250,000).
    pub max_tokens: Option<usize>,
}

impl DescribeOptions {
    /// The options of a `codemode.describe(target, options)` call (`args.options`, if any), or
    /// a message saying what is wrong with them.
    pub fn from_args(args: &Value) -> Result<DescribeOptions, String> {
        match args.get("options") {
            None | Some(Value::Null) => Ok(DescribeOptions::default()),
            Some(options) => serde_json::from_value(options.clone()).map_err(|e| {
                format!(
                    "codemode.describe(target, options): bad options ({e}); pass {{ page?: number, full?: boolean, maxTokens?: number }}."
                )
            }),
        }
    }

    /// The budget in characters of the answer's JSON.
    pub fn budget_chars(&self) -> usize {
        crate::value::TruncateOptions::tokens(
            self.max_tokens
                .unwrap_or(crate::value::DEFAULT_MAX_RESULT_TOKENS),
        )
        .budget_chars()
    }
}

/// How much of the output types a declaration shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputTypes {
    /// Whole.
    Whole,
    /// Named types up to this many references away; deeper ones are `unknown /* Name */`.
    Levels(usize),
    /// None: methods return `Promise<unknown>`.
    Omitted,
}

/// Levels of named types a method's output type shows by default (`{ full: true }` for all).
const OUTPUT_LEVELS: usize = 2;

/// Declarations of the platform SDK, the `codemode` global.
pub const SDK_DECLARATIONS: &str = r#"type SearchOutput = { results: { path: string; connector: string; method: string; description?: string; kind: "method" | "snippet"; requiresApproval: boolean; score: number }[]; total: number; truncated: boolean; note?: string };
type DescribeOutput = { path: string; description?: string; types: string; kind: "connector" | "method" | "snippet" | "methods"; page?: number; pages?: number; note?: string };
type DescribeOptions = { page?: number; full?: boolean; maxTokens?: number };
declare const codemode: {
  /** Ranked connector methods and saved snippets for a few words (at most 50). */
  search(query: string): Promise<SearchOutput>;
  /** TypeScript declarations for a connector (paged listing when large), "connector.method", a glob such as "github.issues_*", or a snippet name. */
  describe(target: string, options?: DescribeOptions): Promise<DescribeOutput>;
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
        self.describe_with(target, snippets, DescribeOptions::default())
    }

    /// [`Self::describe`] within a budget: a connector or glob (`github.issues_*`) whose
    /// declarations do not fit is listed (name, summary, approval) in pages; a method keeps its
    /// input type whole and shows its output type to a depth that fits, unless `full`.
    pub fn describe_with(
        &self,
        target: &str,
        snippets: &[Snippet],
        options: DescribeOptions,
    ) -> Result<DescribeOutput, String> {
        let target = target.trim();
        let target = target.strip_suffix("()").unwrap_or(target).trim();
        if target.is_empty() {
            return Err(format!(
                "describe needs a target: a connector name, \"connector.method\" or a snippet name. Connectors: {}.",
                self.connector_list()
            ));
        }
        if let Some(&c) = self.by_connector.get(target) {
            let methods: Vec<&MethodEntry> =
                self.methods.iter().filter(|m| m.connector == c).collect();
            return self.describe_methods(target, Some(c), &methods, options);
        }
        if options.page.is_some() && !target.contains('*') && !target.contains('?') {
            // Only listings are paged; a method or snippet is one page.
            if options.page != Some(1) {
                return Err(format!(
                    "{target:?} is not a connector or a glob, so it has one page; leave out `page`."
                ));
            }
        }
        if target.contains('*') || target.contains('?') {
            return self.describe_glob(target, options);
        }
        if let Some(&m) = self.by_path.get(target) {
            return Ok(self.describe_method(&self.methods[m], options));
        }
        if let Some(snippet) = snippets.iter().find(|s| s.name == target) {
            return Ok(describe_snippet(snippet));
        }
        if let Some(found) = self.by_method_name.get(target) {
            match found.as_slice() {
                [m] => return Ok(self.describe_method(&self.methods[*m], options)),
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
                    out.push_str(
                        &self
                            .connector_types(c, &methods, true, OutputTypes::Whole)
                            .0,
                    );
                }
                out
            })
            .clone()
    }

    /// One method: its input type whole; its output type to [`OUTPUT_LEVELS`] levels of named
    /// types, fewer if the answer would not fit the budget (none at all as a last resort).
    fn describe_method(&self, method: &MethodEntry, options: DescribeOptions) -> DescribeOutput {
        let tool = self.tool_of(method);
        let description = tool
            .description
            .as_deref()
            .map(|d| clip(d.trim(), MAX_METHOD_DOC_CHARS));
        let mut out = DescribeOutput {
            path: method.path.clone(),
            description,
            types: String::new(),
            kind: DescribeKind::Method,
            page: None,
            pages: None,
            note: None,
        };
        if options.full || tool.output_schema.is_none() {
            out.types = self
                .connector_types(method.connector, &[method], false, OutputTypes::Whole)
                .0;
            return out;
        }
        let budget = options.budget_chars();
        let mut levels = OutputTypes::Levels(OUTPUT_LEVELS);
        loop {
            let (types, cut) = self.connector_types(method.connector, &[method], false, levels);
            out.types = types;
            out.note = match (levels, cut.is_empty()) {
                (OutputTypes::Levels(_), true) | (OutputTypes::Whole, _) => None,
                (OutputTypes::Levels(n), false) => Some(format!(
                    "the output type shows {n} level(s) of named types; {} deeper are written unknown /* Name */. For all of it: codemode.describe({:?}, {{ full: true }}).",
                    cut.len(),
                    method.path
                )),
                (OutputTypes::Omitted, _) => Some(format!(
                    "the output type is too large for the budget ({budget} characters) and is left out (Promise<unknown>). For it: codemode.describe({:?}, {{ full: true }}).",
                    method.path
                )),
            };
            let fits =
                crate::value::serialized_len(&serde_json::to_value(&out).unwrap_or_default())
                    <= budget;
            levels = match levels {
                _ if fits => return out,
                OutputTypes::Levels(0) => OutputTypes::Omitted,
                OutputTypes::Levels(n) => OutputTypes::Levels(n - 1),
                OutputTypes::Whole | OutputTypes::Omitted => return out,
            };
        }
    }

    /// Input and output types of `methods`, then `declare const <connector>: { … }`, and the
    /// names of output types left out.
    ///
    /// With `full_docs`, each method carries its whole description; otherwise its summary.
    /// `output` says how much of each output type to show.
    pub(crate) fn connector_types(
        &self,
        c: usize,
        methods: &[&MethodEntry],
        full_docs: bool,
        output: OutputTypes,
    ) -> (String, Vec<String>) {
        let connector = &self.connectors[c];
        if let Some(types) = &connector.types {
            return (types.clone(), Vec::new());
        }
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
                        .filter(|_| output != OutputTypes::Omitted)
                        .map(|_| builder.unique_name(&format!("{base}Output"))),
                }
            })
            .collect();
        let mut members = String::new();
        for (method, names) in methods.iter().zip(&names) {
            let tool = self.tool_of(method);
            let positional = connector
                .positional
                .then(|| tool.positional_params())
                .flatten();
            if positional.is_none() {
                builder.declare(&names.input, &tool.input_schema, &tool.input_schema);
            }
            if let (Some(output_name), Some(schema)) = (&names.output, &tool.output_schema) {
                match output {
                    OutputTypes::Levels(n) => {
                        builder.declare_bounded(output_name, schema, schema, n)
                    }
                    _ => builder.declare(output_name, schema, schema),
                }
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
            let params = match &positional {
                Some(p) => positional_signature(&mut builder, &tool.input_schema, p),
                None => format!("input{optional}: {}", names.input),
            };
            members.push_str(&format!(
                "  {}({params}): Promise<{}>;\n",
                tool.name,
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
        builder.finish_with_cuts()
    }

    pub(crate) fn connector_list(&self) -> String {
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
        let connector = target.split('.').next().unwrap_or(target);
        if let Some((name, reason)) = self.unavailable.iter().find(|(n, _)| n == connector) {
            return format!("connector {name} failed to start: {reason}");
        }
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

/// `path: string, options?: Options`: one parameter per property, in call order.
fn positional_signature<'a>(
    builder: &mut TypeScriptBuilder<'a>,
    schema: &'a Value,
    params: &crate::executor::PositionalParams,
) -> String {
    params
        .names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let ty = match schema.get("properties").and_then(|p| p.get(name)) {
                Some(property) => builder.type_expression(property, schema),
                None => "unknown".to_string(),
            };
            let label = if super::names::is_valid_identifier(name) {
                name.clone()
            } else {
                format!("arg{i}")
            };
            let optional = if i < params.required { "" } else { "?" };
            format!("{label}{optional}: {ty}")
        })
        .collect::<Vec<_>>()
        .join(", ")
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
        page: None,
        pages: None,
        note: None,
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
