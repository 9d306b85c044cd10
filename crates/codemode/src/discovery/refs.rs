//! Internal `$ref`s: resolving JSON pointers and bundling referenced schemas into `$defs`.

use serde_json::{Map, Value};
use std::collections::HashMap;

/// How deep [`bundle_refs`] follows nested schemas before leaving the rest as it is.
const MAX_BUNDLE_DEPTH: usize = 64;

/// Resolves an internal reference (`#`, `#/$defs/x`, `#/components/schemas/x`) against `root`.
///
/// External references (not starting with `#`) and pointers that lead nowhere give `None`.
pub fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    let fragment = percent_decode(fragment);
    if fragment.is_empty() || fragment == "/" {
        return Some(root);
    }
    if !fragment.starts_with('/') {
        return None;
    }
    root.pointer(&fragment)
}

/// The last segment of a reference, unescaped: `#/components/schemas/simple-user` gives `simple-user`.
pub(crate) fn last_segment(reference: &str) -> String {
    let decoded = percent_decode(reference.trim_start_matches('#'));
    let last = decoded.rsplit('/').next().unwrap_or_default();
    last.replace("~1", "/").replace("~0", "~")
}

/// `%XX` escapes of a URI fragment decoded (a JSON pointer in a `$ref` may escape characters
/// that way); a `%` not followed by two hex digits is kept as it is.
fn percent_decode(s: &str) -> std::borrow::Cow<'_, str> {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy()
}

/// Makes `schema` self-contained: every internal `$ref` that resolves in `root` is rewritten to
/// `#/$defs/<name>`, and the schemas it points to (and those they reference) are copied into
/// the result's `$defs`. Cycles are kept as references. References that point nowhere or outside
/// the document are left as they are (type generation turns them into `unknown`).
///
/// Typical use: an OpenAPI operation's schemas, with `root` the whole specification.
pub fn bundle_refs(schema: &Value, root: &Value) -> Value {
    let mut bundler = Bundler {
        root,
        names: HashMap::new(),
        taken: HashMap::new(),
        defs: Vec::new(),
    };
    let mut out = bundler.rewrite(schema, 0);
    let mut next = 0;
    while next < bundler.defs.len() {
        let reference = bundler.defs[next].1.clone();
        let rewritten = match resolve_ref(root, &reference) {
            Some(target) => bundler.rewrite(target, 0),
            None => Value::Bool(true),
        };
        bundler.defs[next].2 = rewritten;
        next += 1;
    }
    if bundler.defs.is_empty() {
        return out;
    }
    let mut defs = Map::new();
    for (name, _, value) in bundler.defs {
        defs.insert(name, value);
    }
    match &mut out {
        Value::Object(obj) => {
            if std::ptr::eq(schema, root) {
                obj.remove("definitions");
            }
            obj.insert("$defs".to_string(), Value::Object(defs));
            out
        }
        other => {
            let mut obj = Map::new();
            obj.insert("allOf".to_string(), Value::Array(vec![other.take()]));
            obj.insert("$defs".to_string(), Value::Object(defs));
            Value::Object(obj)
        }
    }
}

struct Bundler<'a> {
    root: &'a Value,
    /// Reference as written → name in `$defs`.
    names: HashMap<String, String>,
    /// Names already used → how many times.
    taken: HashMap<String, usize>,
    /// (name, original reference, rewritten schema), in discovery order.
    defs: Vec<(String, String, Value)>,
}

impl Bundler<'_> {
    fn rewrite(&mut self, value: &Value, depth: usize) -> Value {
        if depth > MAX_BUNDLE_DEPTH {
            return Value::Bool(true);
        }
        match value {
            Value::Object(obj) => {
                let mut out = Map::with_capacity(obj.len());
                for (key, child) in obj {
                    if key == "$ref" {
                        if let Some(reference) = child.as_str() {
                            out.insert(key.clone(), Value::String(self.local_ref(reference)));
                            continue;
                        }
                    }
                    // Enum and const values and examples are data, not schemas.
                    let is_data = matches!(
                        key.as_str(),
                        "enum" | "const" | "default" | "example" | "examples"
                    );
                    let child = if is_data {
                        child.clone()
                    } else {
                        self.rewrite(child, depth + 1)
                    };
                    out.insert(key.clone(), child);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.rewrite(item, depth + 1))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn local_ref(&mut self, reference: &str) -> String {
        if !reference.starts_with('#') || matches!(reference, "#" | "#/") {
            return reference.to_string();
        }
        if resolve_ref(self.root, reference).is_none() {
            return reference.to_string();
        }
        if let Some(name) = self.names.get(reference) {
            return format!("#/$defs/{}", escape_pointer(name));
        }
        let mut name = last_segment(reference);
        if name.is_empty() {
            name = "def".to_string();
        }
        let count = self.taken.entry(name.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            name = format!("{name}_{count}");
        }
        self.names.insert(reference.to_string(), name.clone());
        self.defs
            .push((name.clone(), reference.to_string(), Value::Null));
        format!("#/$defs/{}", escape_pointer(&name))
    }
}

fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_internal_pointers() {
        let root = json!({"$defs": {"a": {"type": "string"}, "x/y": 1}, "components": {"schemas": {"b": true}}});
        assert_eq!(
            resolve_ref(&root, "#/$defs/a"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(resolve_ref(&root, "#/$defs/x~1y"), Some(&json!(1)));
        assert_eq!(
            resolve_ref(&root, "#/components/schemas/b"),
            Some(&json!(true))
        );
        assert_eq!(resolve_ref(&root, "#"), Some(&root));
        assert_eq!(resolve_ref(&root, "#/$defs/missing"), None);
        assert_eq!(resolve_ref(&root, "other.json#/a"), None);
        assert_eq!(resolve_ref(&root, "#nope"), None);
        assert_eq!(
            resolve_ref(&root, "#/%24defs/a"),
            Some(&json!({"type": "string"}))
        );
    }

    #[test]
    fn bundles_referenced_schemas_and_keeps_cycles() {
        let root = json!({"components": {"schemas": {
            "node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/node"}, "user": {"$ref": "#/components/schemas/user"}}},
            "user": {"type": "object", "properties": {"name": {"type": "string"}}}
        }}});
        let schema = json!({"type": "object", "properties": {"head": {"$ref": "#/components/schemas/node"}, "bad": {"$ref": "#/nowhere"}}});
        let bundled = bundle_refs(&schema, &root);
        assert_eq!(bundled["properties"]["head"]["$ref"], "#/$defs/node");
        assert_eq!(bundled["properties"]["bad"]["$ref"], "#/nowhere");
        assert_eq!(
            bundled["$defs"]["node"]["properties"]["next"]["$ref"],
            "#/$defs/node"
        );
        assert_eq!(
            bundled["$defs"]["user"]["properties"]["name"]["type"],
            "string"
        );
        assert_eq!(
            resolve_ref(&bundled, "#/$defs/user"),
            Some(&bundled["$defs"]["user"])
        );
    }

    #[test]
    fn escapes_in_a_pointer_are_decoded_and_a_stray_percent_kept() {
        let root = json!({"$defs": {"a b": 1, "50%": 2, "%+1": 3, "é": 4}});
        assert_eq!(resolve_ref(&root, "#/$defs/a%20b"), Some(&json!(1)));
        assert_eq!(resolve_ref(&root, "#/%24defs/50%"), Some(&json!(2)));
        assert_eq!(resolve_ref(&root, "#/$defs/%C3%A9"), Some(&json!(4)));
        // Two hex digits or nothing: `%+1` is not an escape (a sign parsed as hex made it 0x01).
        assert_eq!(resolve_ref(&root, "#/$defs/%+1"), Some(&json!(3)));
        assert_eq!(last_segment("#/$defs/%+1"), "%+1");
        assert_eq!(last_segment("#/$defs/a%7E1b"), "a/b");
    }

    #[test]
    fn same_last_segment_gets_distinct_names() {
        let root = json!({"a": {"x": {"type": "string"}}, "b": {"x": {"type": "number"}}});
        let schema = json!({"anyOf": [{"$ref": "#/a/x"}, {"$ref": "#/b/x"}]});
        let bundled = bundle_refs(&schema, &root);
        assert_eq!(bundled["anyOf"][0]["$ref"], "#/$defs/x");
        assert_eq!(bundled["anyOf"][1]["$ref"], "#/$defs/x_2");
        assert_eq!(bundled["$defs"]["x_2"]["type"], "number");
    }
}
