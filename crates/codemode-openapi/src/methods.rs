//! Method names for operations: a sanitised operationId, or method and path; a name already
//! taken (by an earlier operation or a built-in method) gets a numbered suffix and a warning.

use crate::operations::Operation;
use codemode::discovery::try_sanitize_tool_name;
use std::collections::HashMap;

/// The name of the low-level request method.
pub const REQUEST_METHOD: &str = "request";
/// The name of the method returning the document, when exposed.
pub const SPEC_METHOD: &str = "spec";

/// One name per operation, in order; each renamed operation adds a sentence to `warnings`.
pub fn method_names(
    ops: &[Operation],
    expose_spec: bool,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let mut taken: HashMap<String, String> = HashMap::new();
    taken.insert(
        REQUEST_METHOD.into(),
        "the built-in `request` method".into(),
    );
    if expose_spec {
        taken.insert(SPEC_METHOD.into(), "the built-in `spec` method".into());
    }
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let candidate = if op.original.contains(' ') {
            fallback_name(&op.method, &op.path)
        } else {
            op.original.clone()
        };
        let base = try_sanitize_tool_name(&candidate)
            .unwrap_or_else(|_| fallback_name(&op.method, &op.path));
        let mut name = base.clone();
        let mut n = 2;
        while taken.contains_key(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        if name != base {
            let holder = match taken.get(&base) {
                Some(h) if h.starts_with("the built-in") => h.clone(),
                Some(h) => format!("operation {h:?}"),
                None => String::new(),
            };
            warnings.push(format!(
                "operation {:?} ({} {}) would be `{base}` like {holder}; it is `{name}`",
                op.original, op.method, op.path
            ));
        }
        taken.insert(name.clone(), op.original.clone());
        out.push(name);
    }
    out
}

/// `get` + `/repos/{owner}/{repo}` → `get_repos_owner_repo`.
fn fallback_name(method: &str, path: &str) -> String {
    let mut out = method.to_ascii_lowercase();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let seg: String = seg
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let seg = seg.trim_matches('_');
        if !seg.is_empty() {
            out.push('_');
            out.push_str(seg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_names_read_well() {
        assert_eq!(
            fallback_name("GET", "/repos/{owner}/{repo}"),
            "get_repos_owner_repo"
        );
        assert_eq!(fallback_name("post", "/"), "post");
        assert_eq!(fallback_name("DELETE", "/a-b/{c.d}"), "delete_a_b_c_d");
    }
}
