//! Host-side queries over one OpenAPI document, so the sandbox never has to hold all of it:
//! a list of operations with a filter, one operation with its `$ref`s resolved, any part of
//! the document by JSON pointer, and the whole document only when it is small.

use codemode::value::serialized_len;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Largest document (serialised, before and after resolving refs) that `spec()` returns whole.
pub const SPEC_MAX_CHARS: usize = 1_000_000;
/// Node budget when resolving the whole small document.
const SPEC_BUDGET: usize = 200_000;
/// Node budget when resolving one operation or one part: refs past it stay `$ref`s.
pub const PART_BUDGET: usize = 20_000;
/// HTTP methods an operation may have, in the order they are listed.
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One operation in the index.
struct Entry {
    method: String,
    path: String,
    summary: Value,
    operation_id: Value,
    tags: Value,
    deprecated: bool,
    /// Lower-case text a query matches: method, path, operationId, summary, tags, description.
    haystack: String,
}

/// The document and an index of its operations, shared by both tools.
pub struct SpecIndex {
    doc: Arc<Value>,
    entries: Vec<Entry>,
    /// The whole document with refs resolved, when it is small enough to hand out.
    whole: Option<Arc<Value>>,
    chars: usize,
}

impl SpecIndex {
    /// Indexes `doc`'s operations; resolves the whole document only when it is small.
    pub fn new(doc: Arc<Value>) -> SpecIndex {
        let chars = serialized_len(&doc);
        let whole = (chars <= SPEC_MAX_CHARS)
            .then(|| resolve_refs_within(&doc, SPEC_BUDGET))
            .filter(|w| serialized_len(w) <= SPEC_MAX_CHARS)
            .map(Arc::new);
        let mut entries = Vec::new();
        let paths = doc.get("paths").and_then(Value::as_object);
        for (path, item) in paths.into_iter().flatten() {
            for method in METHODS {
                let Some(op) = item.get(*method).and_then(Value::as_object) else {
                    continue;
                };
                let text = |k: &str| op.get(k).and_then(Value::as_str).unwrap_or("");
                let tags = op.get("tags").cloned().unwrap_or(Value::Null);
                let haystack = format!(
                    "{method} {path} {} {} {} {}",
                    text("operationId"),
                    text("summary"),
                    tags.as_array()
                        .map(|t| t.iter().filter_map(Value::as_str).collect::<Vec<_>>())
                        .unwrap_or_default()
                        .join(" "),
                    text("description")
                )
                .to_lowercase();
                entries.push(Entry {
                    method: method.to_uppercase(),
                    path: path.clone(),
                    summary: op.get("summary").cloned().unwrap_or(Value::Null),
                    operation_id: op.get("operationId").cloned().unwrap_or(Value::Null),
                    tags,
                    deprecated: op.get("deprecated") == Some(&Value::Bool(true)),
                    haystack,
                });
            }
        }
        SpecIndex {
            doc,
            entries,
            whole,
            chars,
        }
    }

    /// The number of operations.
    pub fn operation_count(&self) -> usize {
        self.entries.len()
    }

    /// Whether `spec()` hands out the whole document.
    pub fn is_small(&self) -> bool {
        self.whole.is_some()
    }

    /// The whole document, refs resolved, or why not (it is too large).
    pub fn spec(&self, name: &str) -> Result<Value, String> {
        match &self.whole {
            Some(w) => Ok(w.as_ref().clone()),
            None => Err(format!(
                "spec: the document is too large to load whole ({} characters, {} operations); use \
                 {name}.paths(filter) to list operations, {name}.operation('METHOD /path') for \
                 one with its schemas, and {name}.get('#/pointer') for any other part",
                self.chars,
                self.entries.len()
            )),
        }
    }

    /// Operations matching `filter`: `{}` (all), a query string, or `{query, tag, method,
    /// path}`. A query matches when every word is in the method, path, operationId, summary,
    /// tags or description; `path` is a substring of the path template.
    pub fn paths(&self, filter: &Value) -> Result<Value, String> {
        let (query, tag, method, path) = match filter {
            Value::String(q) => (q.as_str(), None, None, None),
            Value::Object(m) => {
                let field = |k: &str| -> Result<Option<&str>, String> {
                    match m.get(k) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(s)) => Ok(Some(s.as_str())),
                        Some(_) => Err(format!("paths: `{k}` must be a string")),
                    }
                };
                if let Some(k) = m
                    .keys()
                    .find(|k| !["query", "tag", "method", "path"].contains(&k.as_str()))
                {
                    return Err(format!(
                        "paths: unknown filter `{k}` (use query, tag, method, path)"
                    ));
                }
                (
                    field("query")?.unwrap_or(""),
                    field("tag")?,
                    field("method")?,
                    field("path")?,
                )
            }
            Value::Null => ("", None, None, None),
            _ => return Err("paths: the filter is a string or an object".into()),
        };
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let out: Vec<Value> = self
            .entries
            .iter()
            .filter(|e| words.iter().all(|w| e.haystack.contains(w.as_str())))
            .filter(|e| method.is_none_or(|m| e.method.eq_ignore_ascii_case(m)))
            .filter(|e| path.is_none_or(|p| e.path.contains(p)))
            .filter(|e| {
                tag.is_none_or(|t| {
                    e.tags.as_array().is_some_and(|tags| {
                        tags.iter()
                            .any(|x| x.as_str().is_some_and(|x| x.eq_ignore_ascii_case(t)))
                    })
                })
            })
            .map(|e| {
                let mut m = Map::new();
                m.insert("method".into(), json!(e.method));
                m.insert("path".into(), json!(e.path));
                for (k, v) in [
                    ("operationId", &e.operation_id),
                    ("summary", &e.summary),
                    ("tags", &e.tags),
                ] {
                    if !v.is_null() {
                        m.insert(k.into(), v.clone());
                    }
                }
                if e.deprecated {
                    m.insert("deprecated".into(), Value::Bool(true));
                }
                Value::Object(m)
            })
            .collect();
        Ok(Value::Array(out))
    }

    /// One operation, named `'METHOD /path'`, by operationId, or `{method, path}` /
    /// `{operationId}`, with path-level parameters merged in and its refs resolved.
    pub fn operation(&self, name: &str, which: &Value) -> Result<Value, String> {
        let (method, path, id) = match which {
            Value::String(s) => match s.trim().split_once(' ') {
                Some((m, p)) => (Some(m.trim()), Some(p.trim()), None),
                None => (None, None, Some(s.trim())),
            },
            Value::Object(m) => (
                m.get("method").and_then(Value::as_str),
                m.get("path").and_then(Value::as_str),
                m.get("operationId").and_then(Value::as_str),
            ),
            _ => (None, None, None),
        };
        let entry = self.entries.iter().find(|e| match (method, path, id) {
            (Some(m), Some(p), _) => e.method.eq_ignore_ascii_case(m) && e.path == p,
            (_, _, Some(id)) => e.operation_id.as_str() == Some(id),
            _ => false,
        });
        let Some(e) = entry else {
            return Err(format!(
                "operation: no operation {which}; pass 'METHOD /path' or an operationId as \
                 {name}.paths() lists them"
            ));
        };
        let item = &self.doc["paths"][&e.path];
        let op = &item[e.method.to_lowercase()];
        let mut out = Map::new();
        out.insert("method".into(), json!(e.method));
        out.insert("path".into(), json!(e.path));
        if let Value::Object(fields) = op {
            for (k, v) in fields {
                out.insert(k.clone(), v.clone());
            }
        }
        // Path-level parameters apply unless the operation overrides them (same name and in).
        if let Some(Value::Array(shared)) = item.get("parameters") {
            let own = op.get("parameters").and_then(Value::as_array);
            let key = |p: &Value| {
                let p = self.deref(p);
                (p.get("name").cloned(), p.get("in").cloned())
            };
            let mut params: Vec<Value> = shared
                .iter()
                .filter(|p| own.is_none_or(|o| !o.iter().any(|q| key(q) == key(p))))
                .cloned()
                .collect();
            params.extend(own.into_iter().flatten().cloned());
            out.insert("parameters".into(), Value::Array(params));
        }
        Ok(resolve_from(&self.doc, &Value::Object(out), PART_BUDGET))
    }

    /// The part of the document a JSON pointer names (`#/components/schemas/x` or
    /// `/components/…`), refs resolved.
    pub fn get(&self, name: &str, pointer: &Value) -> Result<Value, String> {
        let p = match pointer {
            Value::String(s) => s.as_str(),
            Value::Object(m) => m.get("pointer").and_then(Value::as_str).unwrap_or(""),
            _ => "",
        };
        let p = p.strip_prefix('#').unwrap_or(p);
        match self.doc.pointer(p) {
            Some(v) if !p.is_empty() => Ok(resolve_from(&self.doc, v, PART_BUDGET)),
            Some(_) => self.spec(name),
            None => Err(format!(
                "get: nothing at {pointer}; pass a JSON pointer such as '#/components/schemas/NAME'"
            )),
        }
    }

    fn deref<'a>(&'a self, v: &'a Value) -> &'a Value {
        let mut cur = v;
        for _ in 0..32 {
            match cur.get("$ref").and_then(Value::as_str) {
                Some(r) => match r.strip_prefix('#').and_then(|p| self.doc.pointer(p)) {
                    Some(t) => cur = t,
                    None => break,
                },
                None => break,
            }
        }
        cur
    }
}

/// Inlines every local `$ref` (`#/...`) of `doc`. A reference met again inside its own
/// expansion (a recursive schema) stays a `$ref`, and so do references once `budget` nodes
/// are spent, so a huge document cannot blow up.
pub fn resolve_refs_within(doc: &Value, budget: usize) -> Value {
    resolve_from(doc, doc, budget)
}

fn resolve_from(root: &Value, v: &Value, budget: usize) -> Value {
    let mut budget = budget;
    let mut stack = Vec::new();
    resolve(root, v, &mut stack, &mut budget)
}

fn resolve(root: &Value, v: &Value, stack: &mut Vec<String>, budget: &mut usize) -> Value {
    *budget = budget.saturating_sub(1);
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                if let Some(pointer) = r.strip_prefix('#') {
                    let target = root.pointer(pointer);
                    if let Some(target) = target.filter(|_| *budget > 0 && !stack.contains(r)) {
                        stack.push(r.clone());
                        let mut resolved = resolve(root, target, stack, budget);
                        stack.pop();
                        // Siblings of `$ref` (3.1: description, summary) are kept.
                        if let Value::Object(out) = &mut resolved {
                            for (k, s) in map.iter().filter(|(k, _)| *k != "$ref") {
                                out.insert(k.clone(), resolve(root, s, stack, budget));
                            }
                        }
                        return resolved;
                    }
                }
            }
            let mut out = Map::with_capacity(map.len());
            for (k, s) in map {
                out.insert(k.clone(), resolve(root, s, stack, budget));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|s| resolve(root, s, stack, budget))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({
            "openapi": "3.0.3",
            "paths": {
                "/a/{id}": {
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "get": {"operationId": "getA", "summary": "Get an A", "tags": ["alpha"],
                            "responses": {"200": {"$ref": "#/components/responses/Ok"}}},
                    "delete": {"operationId": "deleteA", "summary": "Remove it", "deprecated": true,
                               "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}]}
                },
                "/b": {"post": {"operationId": "makeB", "description": "Creates a widget"}}
            },
            "components": {
                "responses": {"Ok": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}},
                "schemas": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}}}
            }
        })
    }

    #[test]
    fn refs_are_inlined_and_recursion_stays_a_ref() {
        let r = resolve_refs_within(&doc(), SPEC_BUDGET);
        let ok = &r["paths"]["/a/{id}"]["get"]["responses"]["200"];
        assert_eq!(ok["description"], "ok");
        let node = &ok["content"]["application/json"]["schema"];
        assert_eq!(node["type"], "object");
        assert_eq!(
            node["properties"]["next"]["$ref"],
            "#/components/schemas/Node"
        );
    }

    #[test]
    fn paths_filter_by_words_tag_method_and_path() {
        let ix = SpecIndex::new(Arc::new(doc()));
        assert!(ix.is_small());
        assert_eq!(ix.paths(&json!({})).unwrap().as_array().unwrap().len(), 3);
        let widget = ix.paths(&json!("widget creates")).unwrap();
        assert_eq!(
            widget,
            json!([{"method": "POST", "path": "/b", "operationId": "makeB"}])
        );
        let alpha = ix.paths(&json!({"tag": "ALPHA"})).unwrap();
        assert_eq!(alpha[0]["operationId"], "getA");
        assert_eq!(alpha.as_array().unwrap().len(), 1);
        let del = ix
            .paths(&json!({"method": "delete", "path": "/a"}))
            .unwrap();
        assert_eq!(del[0]["deprecated"], true);
        assert!(ix.paths(&json!({"nope": 1})).is_err());
    }

    #[test]
    fn operation_resolves_refs_and_merges_path_parameters() {
        let ix = SpecIndex::new(Arc::new(doc()));
        let op = ix.operation("api", &json!("GET /a/{id}")).unwrap();
        assert_eq!(op["operationId"], "getA");
        assert_eq!(op["parameters"][0]["name"], "id");
        assert_eq!(op["responses"]["200"]["description"], "ok");
        // The operation's own `id` overrides the path-level one.
        let del = ix
            .operation("api", &json!({"operationId": "deleteA"}))
            .unwrap();
        let params = del["parameters"].as_array().unwrap();
        assert_eq!(params.len(), 1);
        assert_eq!(params[0]["schema"]["type"], "integer");
        assert!(ix.operation("api", &json!("GET /nope")).is_err());
        let node = ix.get("api", &json!("#/components/schemas/Node")).unwrap();
        assert_eq!(node["properties"]["next"]["type"], "object");
        assert!(ix.get("api", &json!("#/nothing")).is_err());
    }

    #[test]
    fn a_large_document_is_not_handed_out_whole() {
        let mut d = doc();
        d["info"] = json!({"description": "x".repeat(SPEC_MAX_CHARS)});
        let ix = SpecIndex::new(Arc::new(d));
        assert!(!ix.is_small());
        let e = ix.spec("api").unwrap_err();
        assert!(e.contains("api.paths(filter)"), "{e}");
        assert_eq!(ix.paths(&json!({})).unwrap().as_array().unwrap().len(), 3);
    }
}
