//! Connector configuration shared by every connector kind: which tools need approval, and how
//! a tool's effect is reverted by calling another tool of the same connector.
//!
//! # Approval: fail closed
//!
//! [`ApprovalPolicy::requires_approval`] decides, in this order:
//! 1. a tool matching `require` needs approval, read-only or not;
//! 2. a tool known to be read-only (MCP `readOnlyHint: true`, an OpenAPI GET/HEAD/OPTIONS) runs;
//! 3. a tool matching `allow` runs;
//! 4. every other tool needs approval.
//!
//! A tool the configuration has never heard of therefore needs approval: a server that adds a
//! mutating tool tomorrow cannot slip past the policy. Patterns are tool names or globs with
//! `*` (any run of characters, empty included) and `?` (exactly one character), matched against
//! both the tool's original name and its sanitised method name.
//!
//! ```toml
//! [approval]
//! allow = ["list_*", "search_issues"]   # mutating tools that may run without approval
//! require = ["get_secret"]              # read-only tools that still need approval
//! ```
//!
//! # Reverts: a small mapping language
//!
//! A [`RevertRule`] says "the revert of `tool` is `revert` called with `args`", where `args` is a
//! JSON template over the original call's arguments and recorded result:
//!
//! ```toml
//! [[reverts]]
//! tool = "create_issue"
//! revert = "delete_issue"
//! args = { owner = "${args.owner}", repo = "${args.repo}", number = "${result.number}" }
//! ```
//!
//! - Any JSON value may appear in `args`; only strings are templates.
//! - A string that is exactly one placeholder, `"${result.id}"`, is replaced by the value found
//!   there with its JSON type kept (a number stays a number, an object stays an object).
//! - A placeholder inside longer text, `"issue ${result.number} of ${args.repo}"`, is
//!   interpolated: strings as they are, other values as compact JSON.
//! - A path starts at `args` or `result` and goes on with `.key` or `.0` (array index) steps;
//!   `/` may be used instead of `.` (JSON-pointer style, with `~1` for `/` and `~0` for `~` inside
//!   a key), so a key holding a dot is reachable: `${result/weird.key/0}`.
//! - `$${` writes a literal `${`.
//! - A path that finds nothing makes the revert fail with an error naming the path; a rule is
//!   checked when it is read, so a malformed template is a configuration error, not a late one.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// Which tools need a person's approval; fails closed (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPolicy {
    /// Names or globs of tools that run without approval although not known to be read-only.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Names or globs of tools that need approval even when known to be read-only.
    #[serde(default)]
    pub require: Vec<String>,
}

impl ApprovalPolicy {
    /// Whether a call to the tool needs approval; `names` are its original and sanitised names.
    pub fn requires_approval(&self, names: &[&str], read_only: bool) -> bool {
        let matches = |patterns: &[String]| {
            patterns
                .iter()
                .any(|p| names.iter().any(|n| glob_match(p, n)))
        };
        if matches(&self.require) {
            return true;
        }
        if read_only {
            return false;
        }
        !matches(&self.allow)
    }
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` one character.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Why a revert template could not be read or applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TemplateError {
    /// A `${` without its closing `}`.
    #[error("template {template:?}: `${{` is not closed by `}}`")]
    Unclosed {
        /// The template text.
        template: String,
    },
    /// A path that does not start at `args` or `result`.
    #[error("template {template:?}: path {path:?} must start with `args` or `result`")]
    BadRoot {
        /// The template text.
        template: String,
        /// The path as written.
        path: String,
    },
    /// A path with an empty step, such as `result..id`.
    #[error("template {template:?}: path {path:?} has an empty step")]
    EmptyStep {
        /// The template text.
        template: String,
        /// The path as written.
        path: String,
    },
    /// A path that finds nothing in the call's arguments or result.
    #[error("revert template path `{path}` finds nothing in the call's {root}")]
    Missing {
        /// The path as written.
        path: String,
        /// `args` or `result`.
        root: String,
    },
}

/// Where a path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Args,
    Result,
}

impl Root {
    fn label(self) -> &'static str {
        match self {
            Root::Args => "args",
            Root::Result => "result",
        }
    }
}

/// A parsed `${…}` path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Path {
    text: String,
    root: Root,
    steps: Vec<String>,
}

impl Path {
    fn parse(template: &str, text: &str) -> Result<Path, TemplateError> {
        let text = text.trim();
        let split_at = text.find(['.', '/']).unwrap_or(text.len());
        let root = match &text[..split_at] {
            "args" => Root::Args,
            "result" => Root::Result,
            _ => {
                return Err(TemplateError::BadRoot {
                    template: template.to_string(),
                    path: text.to_string(),
                })
            }
        };
        let mut steps = Vec::new();
        let rest = &text[split_at..];
        if !rest.is_empty() {
            let sep = &rest[..1];
            for raw in rest[1..].split(sep) {
                if raw.is_empty() {
                    return Err(TemplateError::EmptyStep {
                        template: template.to_string(),
                        path: text.to_string(),
                    });
                }
                let step = if sep == "/" {
                    raw.replace("~1", "/").replace("~0", "~")
                } else {
                    raw.to_string()
                };
                steps.push(step);
            }
        }
        Ok(Path {
            text: text.to_string(),
            root,
            steps,
        })
    }

    fn lookup<'a>(&self, args: &'a Value, result: &'a Value) -> Result<&'a Value, TemplateError> {
        let mut cur = match self.root {
            Root::Args => args,
            Root::Result => result,
        };
        for step in &self.steps {
            let next = match cur {
                Value::Object(map) => map.get(step),
                Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            cur = next.ok_or_else(|| TemplateError::Missing {
                path: self.text.clone(),
                root: self.root.label().to_string(),
            })?;
        }
        Ok(cur)
    }
}

/// One piece of a string template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Path(Path),
}

/// A compiled template: the shape of the revert's arguments.
#[derive(Debug, Clone, PartialEq)]
enum Template {
    /// A non-string JSON value, copied as it is.
    Literal(Value),
    /// A string that is exactly one placeholder: the value keeps its JSON type.
    Whole(Path),
    /// A string with text and placeholders: always a string.
    Text(Vec<Piece>),
    /// An array of templates.
    Array(Vec<Template>),
    /// An object of templates.
    Object(Vec<(String, Template)>),
}

impl Template {
    fn compile(value: &Value) -> Result<Template, TemplateError> {
        Ok(match value {
            Value::String(s) => {
                let pieces = parse_pieces(s)?;
                match pieces.as_slice() {
                    [Piece::Path(p)] => Template::Whole(p.clone()),
                    _ if pieces.iter().all(|p| matches!(p, Piece::Text(_))) => {
                        Template::Literal(Value::String(
                            pieces
                                .iter()
                                .map(|p| match p {
                                    Piece::Text(t) => t.as_str(),
                                    Piece::Path(_) => "",
                                })
                                .collect(),
                        ))
                    }
                    _ => Template::Text(pieces),
                }
            }
            Value::Array(items) => Template::Array(
                items
                    .iter()
                    .map(Template::compile)
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Template::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), Template::compile(v)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => Template::Literal(other.clone()),
        })
    }

    fn render(&self, args: &Value, result: &Value) -> Result<Value, TemplateError> {
        Ok(match self {
            Template::Literal(v) => v.clone(),
            Template::Whole(p) => p.lookup(args, result)?.clone(),
            Template::Text(pieces) => {
                let mut out = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => out.push_str(t),
                        Piece::Path(p) => match p.lookup(args, result)? {
                            Value::String(s) => out.push_str(s),
                            other => out.push_str(&other.to_string()),
                        },
                    }
                }
                Value::String(out)
            }
            Template::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|t| t.render(args, result))
                    .collect::<Result<_, _>>()?,
            ),
            Template::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, t)| Ok((k.clone(), t.render(args, result)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
        })
    }
}

/// Splits a string into text and `${path}` pieces; `$${` is a literal `${`.
fn parse_pieces(s: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            text.push_str(&rest[..i - 1]);
            text.push_str("${");
            rest = &rest[i + 2..];
            continue;
        }
        text.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or_else(|| TemplateError::Unclosed {
            template: s.to_string(),
        })?;
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Path(Path::parse(s, &after[..end])?));
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// The configuration form of a [`RevertRule`], as written in `codemode.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRevertRule {
    tool: String,
    revert: String,
    #[serde(default = "empty_object")]
    args: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// "The revert of `tool` is `revert` called with `args`", `args` being a template over the
/// original call's `args` and `result` (see the module documentation for the language).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawRevertRule")]
pub struct RevertRule {
    /// The tool whose calls this rule reverts (original or sanitised name).
    pub tool: String,
    /// The tool called to revert it (original or sanitised name).
    pub revert: String,
    /// The template as written.
    pub args: Value,
    compiled: Template,
}

impl TryFrom<RawRevertRule> for RevertRule {
    type Error = TemplateError;

    fn try_from(raw: RawRevertRule) -> Result<Self, Self::Error> {
        RevertRule::new(raw.tool, raw.revert, raw.args)
    }
}

impl RevertRule {
    /// A rule, its template checked now.
    pub fn new(
        tool: impl Into<String>,
        revert: impl Into<String>,
        args: Value,
    ) -> Result<RevertRule, TemplateError> {
        let compiled = Template::compile(&args)?;
        Ok(RevertRule {
            tool: tool.into(),
            revert: revert.into(),
            args,
            compiled,
        })
    }

    /// The revert tool's arguments for one applied call.
    pub fn render(&self, args: &Value, result: &Value) -> Result<Value, TemplateError> {
        self.compiled.render(args, result)
    }
}

impl fmt::Display for RevertRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "revert of {} is {}({})",
            self.tool, self.revert, self.args
        )
    }
}

/// Why a set of revert rules does not fit a connector's tools.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RevertConfigError {
    /// A rule for a tool the connector does not have.
    #[error("revert rule for {tool:?}: the connector has no such tool")]
    UnknownTool {
        /// The tool as written.
        tool: String,
    },
    /// A rule whose revert tool the connector does not have.
    #[error("revert rule for {tool:?}: the revert tool {revert:?} does not exist")]
    UnknownRevert {
        /// The tool the rule is for.
        tool: String,
        /// The revert tool as written.
        revert: String,
    },
    /// Two rules for one tool.
    #[error("two revert rules for {tool:?}")]
    Duplicate {
        /// The tool's method name.
        tool: String,
    },
}

/// Resolved revert rules of one connector, keyed by the reverted tool's method name.
#[derive(Debug, Clone, Default)]
pub struct RevertSet {
    rules: BTreeMap<String, (String, RevertRule)>,
}

impl RevertSet {
    /// Resolves rule names with `resolve` (original or method name → method name) and checks them.
    pub fn build(
        rules: &[RevertRule],
        resolve: impl Fn(&str) -> Option<String>,
    ) -> Result<RevertSet, RevertConfigError> {
        let mut out = BTreeMap::new();
        for rule in rules {
            let tool = resolve(&rule.tool).ok_or_else(|| RevertConfigError::UnknownTool {
                tool: rule.tool.clone(),
            })?;
            let revert = resolve(&rule.revert).ok_or_else(|| RevertConfigError::UnknownRevert {
                tool: rule.tool.clone(),
                revert: rule.revert.clone(),
            })?;
            if out.insert(tool.clone(), (revert, rule.clone())).is_some() {
                return Err(RevertConfigError::Duplicate { tool });
            }
        }
        Ok(RevertSet { rules: out })
    }

    /// Whether `method` has a revert.
    pub fn has(&self, method: &str) -> bool {
        self.rules.contains_key(method)
    }

    /// The revert method and its arguments for one applied call of `method`, if it has a rule.
    pub fn plan(
        &self,
        method: &str,
        args: &Value,
        result: &Value,
    ) -> Option<Result<(String, Value), TemplateError>> {
        let (revert, rule) = self.rules.get(method)?;
        Some(rule.render(args, result).map(|a| (revert.clone(), a)))
    }
}

/// Per-tool settings from configuration, like the reference's `tool()` decorator: one table
/// per tool under the connector's `tools`, keyed by its method name or original name.
///
/// ```toml
/// [tools.issues_get]
/// replay = "reexecute"          # or "log" (the default): run again on every pass
/// requires_approval = false     # wins over the connector's `approval` patterns for this tool
/// description = "Get one issue." # replaces the tool's own description
/// result = { fields = ["number", "title", "state", "body"] }  # or { pick = "/items" }
/// ```
///
/// Reverts stay in `reverts`, and patterns over many tools in `approval`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// Replaces the tool's description.
    #[serde(default)]
    pub description: Option<String>,
    /// How replay treats the tool.
    #[serde(default)]
    pub replay: Option<crate::connector::ReplayPolicy>,
    /// Whether each call needs approval; wins over the connector's `approval` patterns.
    #[serde(default)]
    pub requires_approval: Option<bool>,
    /// How each result is cut down before the code sees it (a pointer pick or kept fields).
    #[serde(default)]
    pub result: Option<crate::shape::ResultShape>,
}

/// Why a connector's `tools` overrides cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OverrideError {
    /// `replay = "reexecute"` on a tool that needs approval.
    #[error("tools.{key}: replay = \"reexecute\" cannot be combined with requiring approval (an approved action would run again on every pass); set requires_approval = false for it if running it again is harmless, or remove `replay`")]
    ReexecuteWithApproval {
        /// The key as written.
        key: String,
    },
    /// A `result` shape that cannot be used.
    #[error("tools.{key}.{problem}")]
    BadShape {
        /// The key as written.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Two keys (original and method name) for one tool.
    #[error("tools.{first} and tools.{second} both name the tool `{method}`; keep one")]
    Duplicate {
        /// The first key.
        first: String,
        /// The second key.
        second: String,
        /// The tool's method name.
        method: String,
    },
}

/// Applies `overrides` to `tools`. A key names a tool by method name or by the original name
/// `original(method)` returns; a key that names no tool is not an error but a warning
/// (returned, one sentence each), as a server may drop a tool.
pub fn apply_overrides(
    tools: &mut [crate::connector::ToolSpec],
    overrides: &BTreeMap<String, ToolOverride>,
    original: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, OverrideError> {
    let mut warnings = Vec::new();
    let mut used: BTreeMap<String, String> = BTreeMap::new();
    for (key, o) in overrides {
        let found = tools.iter().position(|t| &t.name == key).or_else(|| {
            tools
                .iter()
                .position(|t| original(&t.name).as_deref() == Some(key.as_str()))
        });
        let Some(i) = found else {
            warnings.push(format!(
                "tools.{key} is not used: no tool has that method or original name"
            ));
            continue;
        };
        let tool = &mut tools[i];
        if let Some(first) = used.insert(tool.name.clone(), key.clone()) {
            return Err(OverrideError::Duplicate {
                first,
                second: key.clone(),
                method: tool.name.clone(),
            });
        }
        if let Some(d) = &o.description {
            tool.description = Some(d.clone());
        }
        if let Some(r) = o.requires_approval {
            tool.requires_approval = r;
        }
        if let Some(r) = o.replay {
            tool.replay = r;
        }
        if let Some(shape) = &o.result {
            if let Some(problem) = shape.problem() {
                return Err(OverrideError::BadShape {
                    key: key.clone(),
                    problem,
                });
            }
            tool.result_shape = Some(shape.clone());
        }
        if tool.requires_approval && tool.replay == crate::connector::ReplayPolicy::Reexecute {
            return Err(OverrideError::ReexecuteWithApproval { key: key.clone() });
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn glob_matches_names_and_wildcards() {
        assert!(glob_match("list_issues", "list_issues"));
        assert!(!glob_match("list_issues", "list_issue"));
        assert!(glob_match("list_*", "list_"));
        assert!(glob_match("list_*", "list_issues"));
        assert!(glob_match("*_issue", "create_issue"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(glob_match("get_?", "get_x"));
        assert!(!glob_match("get_?", "get_"));
        assert!(!glob_match("get_?", "get_xy"));
        assert!(glob_match("*a*", "banana"));
        assert!(!glob_match("", "x"));
    }

    #[test]
    fn unknown_mutating_tools_fail_closed() {
        let policy = ApprovalPolicy::default();
        assert!(policy.requires_approval(&["delete_repo"], false));
        assert!(policy.requires_approval(&["brand_new_tool"], false));
        assert!(!policy.requires_approval(&["list_repos"], true));
    }

    #[test]
    fn allow_loosens_and_require_tightens() {
        let policy: ApprovalPolicy = serde_json::from_value(json!({
            "allow": ["create_*", "send-message"],
            "require": ["get_secret", "*_private"]
        }))
        .unwrap();
        assert!(!policy.requires_approval(&["create_issue"], false));
        assert!(!policy.requires_approval(&["send-message", "send_message"], false));
        assert!(policy.requires_approval(&["delete_issue"], false));
        assert!(policy.requires_approval(&["get_secret"], true));
        assert!(policy.requires_approval(&["read_private"], true));
        assert!(!policy.requires_approval(&["get_public"], true));
        // require wins over allow
        let both: ApprovalPolicy =
            serde_json::from_value(json!({"allow": ["*"], "require": ["drop_*"]})).unwrap();
        assert!(both.requires_approval(&["drop_table"], false));
        assert!(!both.requires_approval(&["insert_row"], false));
    }

    #[test]
    fn approval_policy_rejects_unknown_fields() {
        let err = serde_json::from_value::<ApprovalPolicy>(json!({"alow": ["x"]})).unwrap_err();
        assert!(err.to_string().contains("alow"), "{err}");
    }

    #[test]
    fn whole_value_substitution_keeps_type() {
        let rule = RevertRule::new(
            "create_issue",
            "delete_issue",
            json!({"id": "${result.id}", "labels": "${args.labels}", "all": "${result}"}),
        )
        .unwrap();
        let out = rule
            .render(&json!({"labels": ["a", "b"]}), &json!({"id": 42}))
            .unwrap();
        assert_eq!(
            out,
            json!({"id": 42, "labels": ["a", "b"], "all": {"id": 42}})
        );
    }

    #[test]
    fn interpolation_nesting_and_escapes() {
        let rule = RevertRule::new(
            "t",
            "u",
            json!({
                "msg": "undo #${result.number} in ${args.repo} (${result.meta})",
                "nested": [{"x": "${result.items.1.id}"}, 3, true, null],
                "literal": "cost $${not.a.path}",
                "pointer": "${result/weird.key/0}",
                "escaped": "${result/a~1b}"
            }),
        )
        .unwrap();
        let out = rule
            .render(
                &json!({"repo": "octo"}),
                &json!({
                    "number": 7, "meta": {"k": 1},
                    "items": [{"id": "a"}, {"id": "b"}],
                    "weird.key": ["w"], "a/b": "slash"
                }),
            )
            .unwrap();
        assert_eq!(
            out,
            json!({
                "msg": "undo #7 in octo ({\"k\":1})",
                "nested": [{"x": "b"}, 3, true, null],
                "literal": "cost ${not.a.path}",
                "pointer": "w",
                "escaped": "slash"
            })
        );
    }

    #[test]
    fn malformed_templates_fail_when_read() {
        assert!(matches!(
            RevertRule::new("t", "u", json!({"a": "${result.id"})),
            Err(TemplateError::Unclosed { .. })
        ));
        assert!(matches!(
            RevertRule::new("t", "u", json!({"a": "${res.id}"})),
            Err(TemplateError::BadRoot { .. })
        ));
        assert!(matches!(
            RevertRule::new("t", "u", json!({"a": "${result..id}"})),
            Err(TemplateError::EmptyStep { .. })
        ));
        let err = serde_json::from_value::<RevertRule>(
            json!({"tool": "t", "revert": "u", "args": {"a": "${bad}"}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("must start with"), "{err}");
        let err =
            serde_json::from_value::<RevertRule>(json!({"tool": "t", "revert": "u", "arg": {}}))
                .unwrap_err();
        assert!(err.to_string().contains("arg"), "{err}");
    }

    #[test]
    fn missing_path_is_an_error_naming_it() {
        let rule = RevertRule::new("t", "u", json!({"id": "${result.id}"})).unwrap();
        let err = rule.render(&json!({}), &json!({"other": 1})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "revert template path `result.id` finds nothing in the call's result"
        );
        let err = rule.render(&json!({}), &json!("scalar")).unwrap_err();
        assert!(matches!(err, TemplateError::Missing { .. }));
    }

    #[test]
    fn rule_without_args_renders_empty_object() {
        let rule: RevertRule =
            serde_json::from_value(json!({"tool": "start", "revert": "stop"})).unwrap();
        assert_eq!(rule.render(&json!({}), &json!(null)).unwrap(), json!({}));
    }

    #[test]
    fn revert_set_resolves_and_checks_names() {
        let rules = vec![RevertRule::new(
            "create-issue",
            "delete_issue",
            json!({"id": "${result.id}"}),
        )
        .unwrap()];
        let resolve = |n: &str| match n {
            "create-issue" | "create_issue" => Some("create_issue".to_string()),
            "delete_issue" => Some("delete_issue".to_string()),
            _ => None,
        };
        let set = RevertSet::build(&rules, resolve).unwrap();
        assert!(set.has("create_issue"));
        assert!(!set.has("delete_issue"));
        let (method, args) = set
            .plan("create_issue", &json!({}), &json!({"id": 5}))
            .unwrap()
            .unwrap();
        assert_eq!((method.as_str(), args), ("delete_issue", json!({"id": 5})));
        assert!(set.plan("delete_issue", &json!({}), &json!({})).is_none());

        let bad = vec![RevertRule::new("nope", "delete_issue", json!({})).unwrap()];
        assert!(matches!(
            RevertSet::build(&bad, resolve),
            Err(RevertConfigError::UnknownTool { .. })
        ));
        let bad = vec![RevertRule::new("create_issue", "nope", json!({})).unwrap()];
        assert!(matches!(
            RevertSet::build(&bad, resolve),
            Err(RevertConfigError::UnknownRevert { .. })
        ));
        let dup = vec![
            RevertRule::new("create_issue", "delete_issue", json!({})).unwrap(),
            RevertRule::new("create-issue", "delete_issue", json!({})).unwrap(),
        ];
        assert!(matches!(
            RevertSet::build(&dup, resolve),
            Err(RevertConfigError::Duplicate { .. })
        ));
    }
}
