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

mod overrides;
mod revert;
mod template;

pub use overrides::{apply_overrides, OverrideError, ToolOverride};
pub use revert::{RevertConfigError, RevertRule, RevertSet};
pub use template::TemplateError;

use serde::Deserialize;

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
}
