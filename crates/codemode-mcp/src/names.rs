//! Method names for a server's tools: configured renames first, names that already are
//! identifiers next, then sanitised names, with a numbered suffix (and a warning) on a collision.

use crate::error::Cause;
use codemode::discovery::{is_valid_identifier, try_sanitize_tool_name};
use std::collections::{BTreeMap, BTreeSet};

/// The method name of each tool (`None` when the tool is left out), and what to tell the host.
#[derive(Debug, Default)]
pub struct Naming {
    /// One entry per tool, in the server's order.
    pub methods: Vec<Option<String>>,
    /// One sentence per renamed or left-out tool, and per unused `rename` entry.
    pub warnings: Vec<String>,
}

/// Names the tools `originals`; `rename` maps a tool's name on the server to its method name.
///
/// A `rename` value that is not an identifier, or two entries with one value, are errors: the
/// configuration is wrong and says so. Everything the server got wrong is a warning instead.
pub fn method_names(
    originals: &[String],
    rename: &BTreeMap<String, String>,
) -> Result<Naming, Cause> {
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    for (from, to) in rename {
        if !is_valid_identifier(to) {
            return Err(Cause::Rename(format!(
                "{to:?} (for tool {from:?}) is not a JavaScript identifier; use letters, digits, `_` and `$`, not starting with a digit, and not a reserved word"
            )));
        }
        if let Some(other) = taken.insert(to.clone(), from.clone()) {
            return Err(Cause::Rename(format!(
                "tools {other:?} and {from:?} are both renamed to {to:?}; give each its own name"
            )));
        }
    }

    let mut naming = Naming {
        methods: vec![None; originals.len()],
        warnings: Vec::new(),
    };
    let mut seen_originals = BTreeSet::new();
    let mut sanitised: Vec<Option<String>> = vec![None; originals.len()];
    for (i, original) in originals.iter().enumerate() {
        if !seen_originals.insert(original.as_str()) {
            naming.warnings.push(format!(
                "the server lists tool {original:?} twice; only the first is used"
            ));
            continue;
        }
        if let Some(to) = rename.get(original) {
            naming.methods[i] = Some(to.clone());
            continue;
        }
        match try_sanitize_tool_name(original) {
            Ok(name) => sanitised[i] = Some(name),
            Err(e) => naming.warnings.push(format!(
                "tool {original:?} is left out: {e}; set rename = {{ {original:?} = \"a_name\" }} to use it"
            )),
        }
    }
    for from in rename.keys() {
        if !seen_originals.contains(from.as_str()) {
            naming.warnings.push(format!(
                "rename names tool {from:?}, which the server does not have"
            ));
        }
    }

    // Names that need no sanitising keep them; the others take what is left, in order.
    let mut first_with: BTreeMap<String, String> = BTreeMap::new();
    for exact in [true, false] {
        for (i, original) in originals.iter().enumerate() {
            let Some(name) = &sanitised[i] else {
                continue;
            };
            if (name == original) != exact {
                continue;
            }
            let mut method = name.clone();
            let mut n = 2;
            while taken.contains_key(&method) {
                method = format!("{name}_{n}");
                n += 1;
            }
            if &method != name {
                let holder = first_with
                    .get(name)
                    .or_else(|| taken.get(name))
                    .cloned()
                    .unwrap_or_default();
                naming.warnings.push(format!(
                    "tools {holder:?} and {original:?} both become `{name}`; {original:?} is `{method}` (set rename = {{ {original:?} = \"a_name\" }} to choose)"
                ));
            }
            first_with.entry(name.clone()).or_insert(original.clone());
            taken.insert(method.clone(), original.clone());
            naming.methods[i] = Some(method);
        }
    }
    Ok(naming)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(originals: &[&str], rename: &[(&str, &str)]) -> Naming {
        let originals: Vec<String> = originals.iter().map(|s| s.to_string()).collect();
        let rename = rename
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        method_names(&originals, &rename).unwrap()
    }

    fn methods(n: &Naming) -> Vec<Option<&str>> {
        n.methods.iter().map(|m| m.as_deref()).collect()
    }

    #[test]
    fn exact_names_win_and_the_other_gets_a_suffix() {
        let n = names(&["get-item", "get_item", "get.item"], &[]);
        assert_eq!(
            methods(&n),
            [Some("get_item_2"), Some("get_item"), Some("get_item_3")]
        );
        assert_eq!(n.warnings.len(), 2, "{:?}", n.warnings);
        assert!(
            n.warnings[0].contains("\"get_item\" and \"get-item\" both become `get_item`")
                && n.warnings[0].contains("`get_item_2`"),
            "{:?}",
            n.warnings
        );
    }

    #[test]
    fn renames_come_first_and_unused_ones_are_reported() {
        let n = names(
            &["get-item", "get_item", "x"],
            &[("get-item", "fetch_item"), ("nope", "y")],
        );
        assert_eq!(
            methods(&n),
            [Some("fetch_item"), Some("get_item"), Some("x")]
        );
        assert_eq!(n.warnings.len(), 1);
        assert!(n.warnings[0].contains("\"nope\""), "{:?}", n.warnings);
        // A rename onto a server name pushes that tool aside, with a warning.
        let n = names(&["a", "b"], &[("b", "a")]);
        assert_eq!(methods(&n), [Some("a_2"), Some("a")]);
        assert_eq!(n.warnings.len(), 1);
    }

    #[test]
    fn unusable_and_repeated_names_are_left_out() {
        let n = names(&["@@", "ok", "ok"], &[]);
        assert_eq!(methods(&n), [None, Some("ok"), None]);
        assert_eq!(n.warnings.len(), 2, "{:?}", n.warnings);
    }

    #[test]
    fn bad_renames_are_errors() {
        let originals = vec!["a".to_string(), "b".to_string()];
        let bad = BTreeMap::from([("a".to_string(), "not-ok".to_string())]);
        let err = method_names(&originals, &bad).unwrap_err().to_string();
        assert!(
            err.contains("\"not-ok\"") && err.contains("identifier"),
            "{err}"
        );
        let twice = BTreeMap::from([
            ("a".to_string(), "z".to_string()),
            ("b".to_string(), "z".to_string()),
        ]);
        let err = method_names(&originals, &twice).unwrap_err().to_string();
        assert!(err.contains("both renamed to \"z\""), "{err}");
    }
}
