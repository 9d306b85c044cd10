//! Local `$ref` resolution (JSON pointers into the document) and self-contained schemas.
//!
//! A schema is made self-contained by inlining every ref it reaches. Recursion (a schema that
//! contains itself) cannot be inlined: the recursive target is hoisted into `$defs` and referred
//! to as `#/$defs/<name>`. A schema that would grow past a node budget when inlined is built the
//! other way round, every ref hoisted, which stays linear in the number of distinct refs.

use crate::error::RefError;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Looks up local refs in one document.
#[derive(Clone, Copy)]
pub struct Resolver<'a> {
    doc: &'a Value,
}

impl<'a> Resolver<'a> {
    /// A resolver over `doc`.
    pub fn new(doc: &'a Value) -> Self {
        Resolver { doc }
    }

    /// The value a `#/…` pointer names.
    pub fn pointer(&self, reference: &str) -> Result<&'a Value, RefError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(RefError::External(reference.to_string()));
        };
        let decoded = percent_encoding::percent_decode_str(pointer).decode_utf8_lossy();
        self.doc
            .pointer(&decoded)
            .ok_or_else(|| RefError::Dangling(reference.to_string()))
    }

    /// Follows `value` through any chain of `$ref`s to a value that is not a ref.
    ///
    /// Returns the value and the last ref followed (`None` when `value` was not a ref).
    pub fn deref(&self, value: &'a Value) -> Result<(&'a Value, Option<&'a str>), RefError> {
        let mut cur = value;
        let mut last = None;
        let mut chain: Vec<String> = Vec::new();
        while let Some(r) = ref_of(cur) {
            if chain.iter().any(|c| c == r) {
                chain.push(r.to_string());
                return Err(RefError::Loop(chain));
            }
            chain.push(r.to_string());
            cur = self.pointer(r)?;
            last = Some(r);
        }
        Ok((cur, last))
    }
}

/// The `$ref` string of an object, if it has one.
pub fn ref_of(value: &Value) -> Option<&str> {
    value.as_object()?.get("$ref")?.as_str()
}

/// Keywords dropped from schemas: documentation payload the model does not need.
const DROPPED: &[&str] = &[
    "example",
    "examples",
    "xml",
    "externalDocs",
    "discriminator",
];

/// Keywords whose values are data, not schemas: copied without looking for refs.
const DATA: &[&str] = &["enum", "const", "default"];

/// Keywords whose values map names (property names…) to schemas: names are never filtered.
const NAME_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Builds self-contained JSON Schemas from document schemas.
///
/// `$defs` names are given per document (the same ref always gets the same name), and a
/// hoisted definition, which does not depend on where it is used, is built once and reused.
pub struct SchemaBuilder<'a> {
    resolver: Resolver<'a>,
    openapi_30: bool,
    budget: usize,
    names: RefCell<HashMap<&'a str, String>>,
    used: RefCell<HashSet<String>>,
    memo: RefCell<HashMap<&'a str, (Value, Vec<&'a str>)>>,
}

struct Pass<'a> {
    hoist_all: bool,
    budget: usize,
    stack: Vec<&'a str>,
    enqueued: HashSet<&'a str>,
    pending: Vec<&'a str>,
    hoisted: Vec<&'a str>,
    nodes: usize,
}

/// The budget ran out; the caller retries with every ref hoisted.
struct OverBudget;

enum Fail {
    Ref(RefError),
    Budget(OverBudget),
}

impl From<RefError> for Fail {
    fn from(e: RefError) -> Self {
        Fail::Ref(e)
    }
}

impl<'a> SchemaBuilder<'a> {
    /// A builder over `doc`; `openapi_30` turns on the 3.0 → JSON Schema fixes (`nullable`…);
    /// `budget` is the default node budget for inlining.
    pub fn new(doc: &'a Value, openapi_30: bool, budget: usize) -> Self {
        SchemaBuilder {
            resolver: Resolver::new(doc),
            openapi_30,
            budget,
            names: RefCell::default(),
            used: RefCell::default(),
            memo: RefCell::default(),
        }
    }

    /// The resolver it uses.
    pub fn resolver(&self) -> Resolver<'a> {
        self.resolver
    }

    /// A self-contained copy of `schema`, inlined within the default budget.
    pub fn build(&self, schema: &'a Value) -> Result<Value, RefError> {
        self.build_with_budget(schema, self.budget)
    }

    /// A self-contained copy of `schema`: inlined if that takes at most `budget` nodes,
    /// otherwise with every ref hoisted into `$defs`.
    pub fn build_with_budget(&self, schema: &'a Value, budget: usize) -> Result<Value, RefError> {
        match self.build_pass(schema, false, budget) {
            Ok(v) => Ok(v),
            Err(Fail::Ref(e)) => Err(e),
            Err(Fail::Budget(_)) => match self.build_pass(schema, true, usize::MAX) {
                Ok(v) => Ok(v),
                Err(Fail::Ref(e)) => Err(e),
                Err(Fail::Budget(_)) => Ok(Value::Object(Map::new())),
            },
        }
    }

    fn build_pass(&self, schema: &'a Value, hoist_all: bool, budget: usize) -> Result<Value, Fail> {
        let mut pass = Pass {
            hoist_all,
            budget,
            stack: Vec::new(),
            enqueued: HashSet::new(),
            pending: Vec::new(),
            hoisted: Vec::new(),
            nodes: 0,
        };
        let mut root = self.walk(schema, &mut pass)?;
        let mut defs = BTreeMap::new();
        while let Some(pointer) = pass.pending.pop() {
            let name = self.names.borrow()[pointer].clone();
            if hoist_all {
                if let Some((built, deps)) = self.memo.borrow().get(pointer) {
                    for d in deps {
                        if pass.enqueued.insert(d) {
                            pass.pending.push(d);
                        }
                    }
                    defs.insert(name, built.clone());
                    continue;
                }
            }
            let target = self.resolver.pointer(pointer)?;
            let mark = pass.hoisted.len();
            pass.stack.push(pointer);
            let built = self.walk(target, &mut pass)?;
            pass.stack.pop();
            if hoist_all {
                let deps = pass.hoisted[mark..].to_vec();
                self.memo
                    .borrow_mut()
                    .insert(pointer, (built.clone(), deps));
            }
            defs.insert(name, built);
        }
        if !defs.is_empty() {
            let defs: Map<String, Value> = defs.into_iter().collect();
            if let Value::Object(map) = &mut root {
                map.insert("$defs".to_string(), Value::Object(defs));
            } else {
                root = serde_json::json!({"allOf": [root], "$defs": defs});
            }
        }
        Ok(root)
    }

    /// The `$defs` name of a ref target: its last pointer segment, made unique per document.
    fn def_name(&self, pointer: &'a str) -> String {
        if let Some(n) = self.names.borrow().get(pointer) {
            return n.clone();
        }
        let base: String = pointer
            .rsplit('/')
            .next()
            .unwrap_or("")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.is_empty() {
            "def".to_string()
        } else {
            base
        };
        let mut used = self.used.borrow_mut();
        let mut name = base.clone();
        let mut i = 2;
        while used.contains(&name) {
            name = format!("{base}_{i}");
            i += 1;
        }
        used.insert(name.clone());
        self.names.borrow_mut().insert(pointer, name.clone());
        name
    }

    fn def_ref(&self, pointer: &'a str, pass: &mut Pass<'a>) -> Value {
        let name = self.def_name(pointer);
        pass.hoisted.push(pointer);
        if pass.enqueued.insert(pointer) {
            pass.pending.push(pointer);
        }
        serde_json::json!({ "$ref": format!("#/$defs/{name}") })
    }

    fn walk(&self, value: &'a Value, pass: &mut Pass<'a>) -> Result<Value, Fail> {
        pass.nodes += 1;
        if pass.nodes > pass.budget {
            return Err(Fail::Budget(OverBudget));
        }
        match value {
            Value::Object(map) => {
                if ref_of(value).is_some() {
                    let (target, last) = self.resolver.deref(value)?;
                    let pointer = last.unwrap_or_default();
                    let mut out = if pass.hoist_all || pass.stack.contains(&pointer) {
                        self.def_ref(pointer, pass)
                    } else {
                        pass.stack.push(pointer);
                        let built = self.walk(target, pass);
                        pass.stack.pop();
                        built?
                    };
                    // 3.1 allows keywords beside `$ref`; keep the documentation ones.
                    if let Value::Object(out_map) = &mut out {
                        for key in ["description", "title"] {
                            if let Some(v) = map.get(key) {
                                out_map.insert(key.to_string(), v.clone());
                            }
                        }
                    }
                    return Ok(out);
                }
                let mut out = Map::with_capacity(map.len());
                for (k, v) in map {
                    if DROPPED.contains(&k.as_str()) || k.starts_with("x-") {
                        continue;
                    }
                    if DATA.contains(&k.as_str()) {
                        out.insert(k.clone(), v.clone());
                    } else if let (true, Value::Object(entries)) =
                        (NAME_MAPS.contains(&k.as_str()), v)
                    {
                        let mut built = Map::with_capacity(entries.len());
                        for (name, schema) in entries {
                            built.insert(name.clone(), self.walk(schema, pass)?);
                        }
                        out.insert(k.clone(), Value::Object(built));
                    } else {
                        out.insert(k.clone(), self.walk(v, pass)?);
                    }
                }
                if self.openapi_30 {
                    fix_30(&mut out);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => Ok(Value::Array(
                items
                    .iter()
                    .map(|v| self.walk(v, pass))
                    .collect::<Result<_, _>>()?,
            )),
            other => Ok(other.clone()),
        }
    }
}

/// OpenAPI 3.0 schema dialect → JSON Schema: `nullable`, boolean `exclusiveMinimum/Maximum`.
fn fix_30(map: &mut Map<String, Value>) {
    if map.remove("nullable") == Some(Value::Bool(true)) {
        match map.get_mut("type") {
            Some(Value::String(t)) => {
                let t = std::mem::take(t);
                map.insert("type".into(), serde_json::json!([t, "null"]));
            }
            Some(Value::Array(ts)) if !ts.iter().any(|t| t == "null") => ts.push("null".into()),
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            if !values.contains(&Value::Null) {
                values.push(Value::Null);
            }
        }
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(b)) = map.get(flag).cloned() {
            map.remove(flag);
            if b {
                if let Some(limit) = map.remove(bound) {
                    map.insert(flag.into(), limit);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inlines_refs_and_hoists_recursion() {
        let doc = json!({"components": {"schemas": {
            "Node": {"type": "object", "properties": {
                "name": {"$ref": "#/components/schemas/Name"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
            }},
            "Name": {"type": "string", "example": "x", "nullable": true}
        }}});
        let b = SchemaBuilder::new(&doc, true, 10_000);
        let out = b
            .build(&json!({"$ref": "#/components/schemas/Node"}))
            .unwrap();
        assert_eq!(
            out["properties"]["name"],
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            out["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(
            out["$defs"]["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
    }

    #[test]
    fn alias_loops_are_errors() {
        let doc = json!({"components": {"schemas": {
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"$ref": "#/components/schemas/A"}
        }}});
        let b = SchemaBuilder::new(&doc, false, 10_000);
        let err = b
            .build(&json!({"$ref": "#/components/schemas/A"}))
            .unwrap_err();
        assert!(matches!(err, RefError::Loop(_)), "{err}");
        assert!(err.to_string().contains("#/components/schemas/A -> "));
    }

    #[test]
    fn dangling_and_external_refs_are_errors() {
        let doc = json!({});
        let (dangling, external) = (json!({"$ref": "#/nope"}), json!({"$ref": "other.yaml#/x"}));
        let b = SchemaBuilder::new(&doc, false, 10_000);
        assert!(matches!(b.build(&dangling), Err(RefError::Dangling(_))));
        assert!(matches!(b.build(&external), Err(RefError::External(_))));
    }

    #[test]
    fn over_budget_hoists_everything() {
        let doc = json!({"components": {"schemas": {
            "Big": {"type": "object", "properties": {
                "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}
            }}
        }}});
        let b = SchemaBuilder::new(&doc, false, 12);
        let schema = json!({"type": "object", "properties": {
            "x": {"$ref": "#/components/schemas/Big"},
            "y": {"$ref": "#/components/schemas/Big"}
        }});
        let out = b.build(&schema).unwrap();
        assert_eq!(out["properties"]["x"], json!({"$ref": "#/$defs/Big"}));
        assert!(out["$defs"]["Big"]["properties"]["a"].is_object());
    }

    #[test]
    fn fixes_30_exclusive_bounds() {
        let doc = json!({});
        let b = SchemaBuilder::new(&doc, true, 100);
        let out = b
            .build(&json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": false}))
            .unwrap();
        assert_eq!(
            out,
            json!({"type": "integer", "exclusiveMinimum": 1, "maximum": 5})
        );
    }
}
