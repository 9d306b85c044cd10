//! Per-tool overrides from a connector's `tools` tables: description, replay policy,
//! approval and result shape.

use serde::Deserialize;
use std::collections::BTreeMap;
use thiserror::Error;

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
