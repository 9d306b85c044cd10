//! Reverts declared in configuration: "the revert of `tool` is `revert` called with `args`",
//! checked against a connector's tools.

use super::template::{Template, TemplateError};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
