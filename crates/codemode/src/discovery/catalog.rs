//! The catalogue of connectors and methods, built once, that search and describe read.

use super::error::DiscoveryError;
use super::names::{check_connector_name, is_valid_identifier};
use super::query::Query;
use super::schema_words::{parameter_names, parameter_prose};
use super::search::{
    round_score, score_unindexed, SearchDoc, SearchIndex, SearchKind, SearchOutput, SearchResult,
    MAX_SEARCH_RESULTS,
};
use super::tokens::first_sentence;
use crate::connector::ToolSpec;
use crate::model::Snippet;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// Longest summary kept for a method or snippet, in characters.
pub(crate) const MAX_SUMMARY_CHARS: usize = 160;
/// Most connector names a "nothing matched" note lists (the rest are counted).
const MAX_NOTE_CONNECTORS: usize = 8;

/// What the catalogue needs to know about one connector.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorInfo {
    /// The global name in the sandbox.
    pub name: String,
    /// Guidance for the model, shown by `describe(name)`.
    pub instructions: Option<String>,
    /// Its tools; names must already be identifiers (see `sanitize_tool_name`).
    pub tools: Vec<ToolSpec>,
    /// One line shown beside the name in the tool description.
    pub hint: Option<String>,
    /// Its methods take positional arguments, so declarations show them as parameters.
    pub positional: bool,
    /// Hand-written declarations shown instead of the generated ones.
    pub types: Option<String>,
}

impl ConnectorInfo {
    /// A connector with these tools, no instructions and no hint.
    pub fn new(name: impl Into<String>, tools: Vec<ToolSpec>) -> Self {
        ConnectorInfo {
            name: name.into(),
            instructions: None,
            tools,
            hint: None,
            positional: false,
            types: None,
        }
    }
}

/// One method of the catalogue.
#[derive(Debug, Clone)]
pub(crate) struct MethodEntry {
    pub connector: usize,
    pub tool: usize,
    pub path: String,
    pub summary: Option<String>,
}

/// Connectors and their methods, with a search index; built once, read many times.
#[derive(Debug)]
pub struct Catalog {
    pub(crate) connectors: Vec<ConnectorInfo>,
    pub(crate) by_connector: HashMap<String, usize>,
    pub(crate) methods: Vec<MethodEntry>,
    pub(crate) by_path: HashMap<String, usize>,
    pub(crate) by_method_name: HashMap<String, Vec<usize>>,
    index: SearchIndex,
    pub(crate) all_types: OnceLock<String>,
    /// Connectors configured but unavailable (they failed to start), with why.
    pub(crate) unavailable: Vec<(String, String)>,
}

impl Catalog {
    /// Validates names (connectors: identifiers, unique, not `codemode`, not a standard global;
    /// tools: identifiers, unique per connector) and builds the search index.
    pub fn new(connectors: Vec<ConnectorInfo>) -> Result<Catalog, DiscoveryError> {
        let mut by_connector = HashMap::new();
        let mut methods = Vec::new();
        for (c, connector) in connectors.iter().enumerate() {
            check_connector_name(&connector.name)?;
            if by_connector.insert(connector.name.clone(), c).is_some() {
                return Err(DiscoveryError::DuplicateConnector {
                    name: connector.name.clone(),
                });
            }
            let mut seen = HashSet::new();
            for (t, tool) in connector.tools.iter().enumerate() {
                if !is_valid_identifier(&tool.name) {
                    return Err(DiscoveryError::InvalidToolName {
                        connector: connector.name.clone(),
                        tool: tool.name.clone(),
                    });
                }
                if !seen.insert(tool.name.as_str()) {
                    return Err(DiscoveryError::DuplicateTool {
                        connector: connector.name.clone(),
                        tool: tool.name.clone(),
                    });
                }
                let summary = tool
                    .description
                    .as_deref()
                    .map(|d| first_sentence(d, MAX_SUMMARY_CHARS))
                    .filter(|s| !s.is_empty());
                methods.push(MethodEntry {
                    connector: c,
                    tool: t,
                    path: format!("{}.{}", connector.name, tool.name),
                    summary,
                });
            }
        }
        let mut by_path = HashMap::new();
        let mut by_method_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (m, method) in methods.iter().enumerate() {
            by_path.insert(method.path.clone(), m);
            let name = &connectors[method.connector].tools[method.tool].name;
            by_method_name.entry(name.clone()).or_default().push(m);
        }
        let parameters: Vec<(Vec<String>, String)> = methods
            .iter()
            .map(|m| {
                let schema = &connectors[m.connector].tools[m.tool].input_schema;
                (parameter_names(schema), parameter_prose(schema))
            })
            .collect();
        let index = SearchIndex::build(methods.iter().zip(&parameters).map(
            |(m, (parameters, prose))| {
                let connector = &connectors[m.connector];
                let tool = &connector.tools[m.tool];
                let summary = m.summary.as_deref().unwrap_or_default();
                let description = tool.description.as_deref().unwrap_or_default();
                SearchDoc {
                    connector: &connector.name,
                    name: &tool.name,
                    summary,
                    description,
                    parameters,
                    parameter_prose: prose,
                    http: tool
                        .http
                        .as_ref()
                        .map(|h| (h.method.as_str(), h.path.as_str())),
                }
            },
        ));
        Ok(Catalog {
            connectors,
            by_connector,
            methods,
            by_path,
            by_method_name,
            index,
            all_types: OnceLock::new(),
            unavailable: Vec::new(),
        })
    }

    /// The catalogue with these connectors listed as unavailable, each with why (the tool
    /// description names them, so the model knows they exist and that their calls fail).
    pub fn with_unavailable(mut self, unavailable: Vec<(String, String)>) -> Catalog {
        self.unavailable = unavailable;
        self
    }

    /// The connectors listed as unavailable, with why.
    pub fn unavailable(&self) -> &[(String, String)] {
        &self.unavailable
    }

    /// The connectors, in the order given.
    pub fn connectors(&self) -> &[ConnectorInfo] {
        &self.connectors
    }

    /// How many methods all connectors have together.
    pub fn method_count(&self) -> usize {
        self.index.len()
    }

    /// The tool behind `connector.method`, if there is one.
    pub fn tool(&self, connector: &str, method: &str) -> Option<&ToolSpec> {
        let c = *self.by_connector.get(connector)?;
        self.connectors[c].tools.iter().find(|t| t.name == method)
    }

    pub(crate) fn tool_of(&self, method: &MethodEntry) -> &ToolSpec {
        &self.connectors[method.connector].tools[method.tool]
    }

    /// Ranked methods and snippets for `query`: at most 50, best first, ties by path.
    ///
    /// Words are split at camelCase, `_`, `.`, `/`, `-` and spaces. A word in the method name
    /// counts more than one in the summary, which counts more than one in the description.
    /// Parameter names count as well (nested ones and parameter descriptions as description),
    /// rarer words count more, and a word also matches its stem, its prefix and its usual
    /// synonyms (`folder` → `directory`), each for less. Queries of up to three words must match
    /// all of them, longer ones at least half (and three), leaving out words that only the prose
    /// of descriptions has; when no method does, those matching the most are given, with a note. When nothing fits, the note says so and names the
    /// connectors searched.
    pub fn search(&self, query: &str, snippets: &[Snippet]) -> SearchOutput {
        let query = Query::parse(query);
        let mut results: Vec<(f32, SearchResult)> = Vec::new();
        let found = self.index.search(&query);
        for &(m, score) in &found.hits {
            let method = &self.methods[m];
            let connector = &self.connectors[method.connector];
            let tool = &connector.tools[method.tool];
            results.push((
                score,
                SearchResult {
                    path: method.path.clone(),
                    connector: connector.name.clone(),
                    method: tool.name.clone(),
                    description: method.summary.clone(),
                    kind: SearchKind::Method,
                    requires_approval: tool.requires_approval,
                    score: round_score(score),
                },
            ));
        }
        for snippet in snippets {
            let summary = first_sentence(&snippet.description, MAX_SUMMARY_CHARS);
            let parameters = snippet
                .input_schema
                .as_ref()
                .map(parameter_names)
                .unwrap_or_default();
            let doc = SearchDoc {
                connector: "codemode",
                name: &snippet.name,
                summary: &summary,
                description: &snippet.description,
                parameters: &parameters,
                parameter_prose: "",
                http: None,
            };
            if let Some(score) = score_unindexed(&query, &doc, &self.index) {
                results.push((
                    score,
                    SearchResult {
                        path: snippet.name.clone(),
                        connector: "codemode".to_string(),
                        method: "run".to_string(),
                        description: Some(summary).filter(|s| !s.is_empty()),
                        kind: SearchKind::Snippet,
                        requires_approval: false,
                        score: round_score(score),
                    },
                ));
            }
        }
        results.sort_by(|(a, ra), (b, rb)| b.total_cmp(a).then_with(|| ra.path.cmp(&rb.path)));
        let total = results.len();
        let mut note = query.note.clone();
        if total > 0 && !found.unmatched.is_empty() && note.is_none() {
            note = Some(format!(
                "no method mentions {}; results match the other words.",
                found
                    .unmatched
                    .iter()
                    .map(|w| format!("{w:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if total > 0 && found.partial && note.is_none() {
            note = Some(
                "no method matches every word; these match the most of them. Check that the first fits before calling it."
                    .to_string(),
            );
        }
        if total == 0 && note.is_none() {
            note = Some(self.nothing_matched(found.weak));
        }
        SearchOutput {
            results: results
                .into_iter()
                .take(MAX_SEARCH_RESULTS)
                .map(|(_, r)| r)
                .collect(),
            total,
            truncated: total > MAX_SEARCH_RESULTS,
            note,
        }
    }
}

impl Catalog {
    /// The note of a search nothing fits: which connectors were searched (at most
    /// [`MAX_NOTE_CONNECTORS`] named), and what to try instead.
    fn nothing_matched(&self, weak: bool) -> String {
        let names: Vec<&str> = self.connectors.iter().map(|c| c.name.as_str()).collect();
        let mut listed = names
            .iter()
            .take(MAX_NOTE_CONNECTORS)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > MAX_NOTE_CONNECTORS {
            listed.push_str(&format!(" and {} more", names.len() - MAX_NOTE_CONNECTORS));
        }
        let how = if weak {
            "only stray words of long descriptions matched, so no method does what was asked"
        } else {
            "no method has these words or their usual synonyms"
        };
        let searched = match names.len() {
            0 => "there are no connectors to search".to_string(),
            1 => format!(
                "searched the {} methods of connector {listed}",
                self.methods.len()
            ),
            n => format!(
                "searched the {} methods of {n} connectors: {listed}",
                self.methods.len()
            ),
        };
        let describe = names.first().map_or(String::new(), |first| {
            format!(", or codemode.describe(\"{first}\") to list a connector's methods")
        });
        format!("nothing matched: {how} ({searched}). Try other words for what the method does or acts on{describe}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolSpec {
        let mut t = ToolSpec::new(name);
        t.description = Some(description.to_string());
        t
    }

    #[test]
    fn rejects_bad_names() {
        let bad_connector = Catalog::new(vec![ConnectorInfo::new("Promise", vec![])]);
        assert!(matches!(
            bad_connector,
            Err(DiscoveryError::InvalidConnectorName { .. })
        ));
        let dup = Catalog::new(vec![
            ConnectorInfo::new("a", vec![]),
            ConnectorInfo::new("a", vec![]),
        ]);
        assert!(matches!(
            dup,
            Err(DiscoveryError::DuplicateConnector { .. })
        ));
        let bad_tool = Catalog::new(vec![ConnectorInfo::new("a", vec![tool("x-y", "")])]);
        assert!(matches!(
            bad_tool,
            Err(DiscoveryError::InvalidToolName { .. })
        ));
        let dup_tool = Catalog::new(vec![ConnectorInfo::new(
            "a",
            vec![tool("x", ""), tool("x", "")],
        )]);
        assert!(matches!(
            dup_tool,
            Err(DiscoveryError::DuplicateTool { .. })
        ));
    }

    fn with_parameters(name: &str, description: &str, parameters: &[&str]) -> ToolSpec {
        let mut t = tool(name, description);
        let properties: serde_json::Map<String, serde_json::Value> = parameters
            .iter()
            .map(|p| (p.to_string(), serde_json::json!({"type": "string"})))
            .collect();
        t.input_schema = serde_json::json!({"type": "object", "properties": properties});
        t
    }

    #[test]
    fn intent_over_small_servers() {
        let catalog = Catalog::new(vec![
            ConnectorInfo::new(
                "files",
                vec![
                    tool("list_directory", "Get a listing of files and directories."),
                    tool("edit_file", "Make line-based edits to a text file."),
                    tool("read_file", "Read a file. DEPRECATED: use read_text_file."),
                    tool("read_text_file", "Read a file as text."),
                ],
            ),
            ConnectorInfo::new(
                "web",
                vec![
                    with_parameters("web_navigate", "Navigate to a URL.", &["url"]),
                    with_parameters("web_click", "Perform click.", &["doubleClick"]),
                    tool("get_sum", "Returns the sum of two numbers."),
                ],
            ),
        ])
        .unwrap();
        // (query, the method meant): synonyms, parameter names, deprecation, partial matches.
        let cases = [
            ("what files are in this folder", "files.list_directory"),
            ("read a file", "files.read_text_file"),
            ("double click", "web.web_click"),
            ("visit a website", "web.web_navigate"),
            ("add two numbers", "web.get_sum"),
        ];
        for (query, meant) in cases {
            let out = catalog.search(query, &[]);
            assert_eq!(
                out.results.first().map(|r| r.path.as_str()),
                Some(meant),
                "{query:?}: {:?}",
                out.results
            );
        }
        // No method both edits and has a folder: those with one of the two are given, and said so.
        let partial = catalog.search("edit a folder", &[]);
        assert_eq!(partial.total, 2, "{:?}", partial.results);
        assert!(partial
            .note
            .unwrap()
            .contains("no method matches every word"));
        let none = catalog.search("order a pizza", &[]);
        assert!(none.results.is_empty());
        assert!(none
            .note
            .unwrap()
            .contains("searched the 7 methods of 2 connectors: files, web"),);
    }

    #[test]
    fn nothing_matched_names_a_bounded_number_of_connectors() {
        let connectors: Vec<ConnectorInfo> = (0..12)
            .map(|i| ConnectorInfo::new(format!("c{i}"), vec![tool("ping", "Ping.")]))
            .collect();
        let note = Catalog::new(connectors)
            .unwrap()
            .search("zebra", &[])
            .note
            .unwrap();
        assert!(
            note.contains("12 connectors: c0, c1, c2, c3, c4, c5, c6, c7 and 4 more"),
            "{note}"
        );
        assert!(note.contains("codemode.describe(\"c0\")"), "{note}");
    }

    #[test]
    fn searches_methods_and_snippets() {
        let catalog = Catalog::new(vec![ConnectorInfo::new(
            "github",
            vec![tool(
                "list_pull_requests",
                "List pull requests. Open ones by default.",
            )],
        )])
        .unwrap();
        let snippet = Snippet {
            name: "open-prs".to_string(),
            description: "Open pull requests of a repository.".to_string(),
            code: String::new(),
            saved_at: 0,
            input_schema: None,
            connectors: vec![],
        };
        let out = catalog.search("pull request", std::slice::from_ref(&snippet));
        assert_eq!(out.total, 2);
        assert_eq!(out.results[0].path, "github.list_pull_requests");
        assert_eq!(
            out.results[0].description.as_deref(),
            Some("List pull requests.")
        );
        assert_eq!(out.results[1].kind, SearchKind::Snippet);
        assert_eq!(out.results[1].path, "open-prs");
        let empty = catalog.search("", &[]);
        assert!(empty.results.is_empty() && empty.note.is_some());
        let none = catalog.search("zebra", &[]);
        assert_eq!(none.total, 0);
        assert!(none.note.is_some());
    }
}
