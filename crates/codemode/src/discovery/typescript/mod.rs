//! JSON Schema → TypeScript declarations. Never fails: what cannot be expressed is `unknown`.
//!
//! `ty.rs` is a rendered type expression and how expressions combine; `walk.rs` reads a
//! schema's keywords into one; this module holds the builder, which names `$ref` targets
//! and emits each named type once.

mod ty;
mod walk;

use super::doc_comment::{render_doc, schema_doc_lines};
use super::names::{is_standard_global, STANDARD_GLOBALS};
use super::refs::{last_segment, resolve_ref};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use ty::Ty;
pub use ty::{property_key, type_name_from};

/// Deepest nesting of inline schemas rendered before giving up with `unknown`.
pub const MAX_SCHEMA_DEPTH: usize = 24;
/// Most named types (from `$ref`s) one builder emits; further references become `unknown`.
pub const MAX_NAMED_TYPES: usize = 4096;
/// Most tuple elements rendered; longer tuples become `unknown[]`.
const MAX_TUPLE_ITEMS: usize = 64;
/// Objects whose one-line form is at most this long, and carry no docs, stay on one line.
const INLINE_OBJECT_CHARS: usize = 80;

/// TypeScript names a generated alias must not take.
const TS_BUILTIN_TYPES: &[&str] = &[
    "Awaited",
    "Exclude",
    "Extract",
    "NonNullable",
    "Omit",
    "Partial",
    "Pick",
    "Readonly",
    "Record",
    "Required",
    "ReturnType",
    "any",
    "bigint",
    "boolean",
    "never",
    "null",
    "number",
    "object",
    "string",
    "symbol",
    "undefined",
    "unknown",
    "void",
];

/// A named type created for a `$ref` target.
struct NamedType<'a> {
    name: String,
    target: &'a Value,
    root: &'a Value,
    /// False for names that are declared elsewhere (a declaration's own root, for `#`).
    emit: bool,
    /// How many references away from a declaration it is (1 for a declaration's own refs).
    level: usize,
    /// The deepest level its own references may create, when bounded.
    limit: Option<usize>,
}

/// Accumulates TypeScript declarations; `$ref` targets become named types emitted once.
///
/// Several declarations built with one builder share their named types, so a connector's
/// methods declare a shared schema (say `SimpleUser`) once.
pub struct TypeScriptBuilder<'a> {
    out: String,
    used_names: HashSet<String>,
    named: Vec<NamedType<'a>>,
    by_reference: HashMap<String, Vec<usize>>,
    /// Level and limit of the declaration being rendered.
    level: usize,
    limit: Option<usize>,
    /// Names of referenced types left out as `unknown` by a limit.
    cut: Vec<String>,
}

impl Default for TypeScriptBuilder<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> TypeScriptBuilder<'a> {
    /// An empty builder.
    pub fn new() -> Self {
        let used_names = TS_BUILTIN_TYPES
            .iter()
            .chain(STANDARD_GLOBALS)
            .map(|s| s.to_string())
            .collect();
        TypeScriptBuilder {
            out: String::new(),
            used_names,
            named: Vec::new(),
            by_reference: HashMap::new(),
            level: 0,
            limit: None,
            cut: Vec::new(),
        }
    }

    /// Like [`Self::declare`], but named types more than `max_levels` references away are
    /// written `unknown /* Name */` instead of declared (see [`Self::finish_with_cuts`]).
    pub fn declare_bounded(
        &mut self,
        name: &str,
        schema: &'a Value,
        root: &'a Value,
        max_levels: usize,
    ) {
        self.limit = Some(max_levels);
        self.declare(name, schema, root);
        self.limit = None;
    }

    /// Keeps `name` from being taken by a generated type (declare it later yourself).
    pub fn reserve(&mut self, name: &str) {
        self.used_names.insert(name.to_string());
    }

    /// Adds `type {name} = …;` for `schema`, whose `$ref`s resolve against `root`.
    pub fn declare(&mut self, name: &str, schema: &'a Value, root: &'a Value) {
        self.used_names.insert(name.to_string());
        if std::ptr::eq(schema, root) {
            self.remember("#", name.to_string(), root, root, false);
        }
        let ty = self.expr(schema, root, 0, 0);
        let doc = render_doc(&schema_doc_lines(schema), "");
        self.out.push_str(&doc);
        self.out.push_str(&format!("type {name} = {};\n", ty.text));
    }

    /// Renders `schema` as an inline type expression (its `$ref`s still become named types).
    pub fn type_expression(&mut self, schema: &'a Value, root: &'a Value) -> String {
        self.expr(schema, root, 0, 0).text
    }

    /// Appends text as it is (for `declare const …` blocks).
    pub fn push_text(&mut self, text: &str) {
        self.out.push_str(text);
    }

    /// The declarations, followed by the named types they reference.
    pub fn finish(self) -> String {
        self.finish_with_cuts().0
    }

    /// The declarations, and the names of the types a bound left out.
    pub fn finish_with_cuts(mut self) -> (String, Vec<String>) {
        let mut next = 0;
        while next < self.named.len() {
            if self.named[next].emit {
                let NamedType {
                    target,
                    root,
                    ref name,
                    level,
                    limit,
                    ..
                } = self.named[next];
                let name = name.clone();
                self.level = level;
                self.limit = limit;
                let ty = self.expr(target, root, 0, 0);
                let doc = render_doc(&schema_doc_lines(target), "");
                self.out.push_str(&doc);
                self.out.push_str(&format!("type {name} = {};\n", ty.text));
            }
            next += 1;
        }
        (self.out, self.cut)
    }

    fn remember(
        &mut self,
        reference: &str,
        name: String,
        target: &'a Value,
        root: &'a Value,
        emit: bool,
    ) {
        self.by_reference
            .entry(reference.to_string())
            .or_default()
            .push(self.named.len());
        self.named.push(NamedType {
            name,
            target,
            root,
            emit,
            level: self.level + 1,
            limit: self.limit,
        });
    }

    fn reference(&mut self, reference: &str, root: &'a Value) -> Ty {
        let key = if matches!(reference, "#" | "#/") {
            "#"
        } else {
            reference
        };
        let Some(target) = resolve_ref(root, key) else {
            return Ty::unknown();
        };
        if let Some(indices) = self.by_reference.get(key) {
            for &i in indices {
                let known = &self.named[i];
                if std::ptr::eq(known.target, target) || known.target == target {
                    return Ty::primary(known.name.clone());
                }
            }
        }
        if self.named.len() >= MAX_NAMED_TYPES {
            return Ty::unknown();
        }
        if self.limit.is_some_and(|limit| self.level >= limit) {
            let name = type_name_from(&last_segment(key));
            if !self.cut.contains(&name) {
                self.cut.push(name.clone());
            }
            return Ty::primary(format!("unknown /* {name} */"));
        }
        let name = self.unique_name(&type_name_from(&last_segment(key)));
        self.remember(key, name.clone(), target, root, true);
        Ty::primary(name)
    }

    /// A type name starting with `base` that no other declaration of this builder uses.
    pub fn unique_name(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut n = 1;
        while self.used_names.contains(&name) || is_standard_global(&name) {
            n += 1;
            name = format!("{base}{n}");
        }
        self.used_names.insert(name.clone());
        name
    }
}

/// TypeScript declarations for one schema: `type {name} = …;` and the named types its `$ref`s need.
///
/// `$ref`s resolve against `root`: pass the schema itself for a self-contained schema, or the
/// whole document (an OpenAPI specification) it comes from.
pub fn schema_to_ts(name: &str, schema: &Value, root: &Value) -> String {
    let mut builder = TypeScriptBuilder::new();
    builder.declare(name, schema, root);
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(schema: Value) -> String {
        schema_to_ts("T", &schema, &schema)
    }

    #[test]
    fn primitives() {
        assert_eq!(ts(json!({"type": "string"})), "type T = string;\n");
        assert_eq!(ts(json!({"type": "integer"})), "type T = number;\n");
        assert_eq!(ts(json!({"type": "boolean"})), "type T = boolean;\n");
        assert_eq!(ts(json!({"type": "null"})), "type T = null;\n");
        assert_eq!(ts(json!(true)), "type T = unknown;\n");
        assert_eq!(ts(json!(false)), "type T = never;\n");
        assert_eq!(ts(json!({})), "type T = unknown;\n");
    }

    #[test]
    fn objects_with_required_and_optional() {
        let out = ts(
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "required": ["a"]}),
        );
        assert_eq!(out, "type T = { a: string; b?: number };\n");
        assert_eq!(
            ts(json!({"type": "object"})),
            "type T = Record<string, unknown>;\n"
        );
    }

    #[test]
    fn enums_and_const() {
        assert_eq!(
            ts(json!({"enum": ["open", "closed", 1, null]})),
            "type T = \"open\" | \"closed\" | 1 | null;\n"
        );
        assert_eq!(ts(json!({"const": "x"})), "type T = \"x\";\n");
        assert_eq!(ts(json!({"enum": [{"a": 1}]})), "type T = unknown;\n");
        assert_eq!(ts(json!({"enum": []})), "type T = never;\n");
    }

    #[test]
    fn unions_and_intersections() {
        assert_eq!(
            ts(json!({"anyOf": [{"type": "string"}, {"type": "number"}]})),
            "type T = string | number;\n"
        );
        assert_eq!(
            ts(json!({"oneOf": [{"type": "string"}, {}]})),
            "type T = unknown;\n"
        );
        let all = ts(json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"anyOf": [{"type": "object", "properties": {"b": {"type": "number"}}}, {"type": "null"}]}
        ]}));
        assert_eq!(all, "type T = { a?: string } & ({ b?: number } | null);\n");
        assert_eq!(
            ts(json!({"type": ["string", "null"]})),
            "type T = string | null;\n"
        );
        assert_eq!(
            ts(json!({"type": "string", "nullable": true})),
            "type T = string | null;\n"
        );
        // Members that only restrict (required-only) add nothing.
        let base = ts(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "oneOf": [{"required": ["a"]}]}),
        );
        assert_eq!(base, "type T = { a?: string };\n");
    }

    #[test]
    fn arrays_and_tuples() {
        assert_eq!(
            ts(json!({"type": "array", "items": {"type": "string"}})),
            "type T = string[];\n"
        );
        assert_eq!(ts(json!({"type": "array"})), "type T = unknown[];\n");
        assert_eq!(
            ts(json!({"type": "array", "items": {"type": ["string", "number"]}})),
            "type T = (string | number)[];\n"
        );
        assert_eq!(
            ts(
                json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false})
            ),
            "type T = [string, number];\n"
        );
        assert_eq!(
            ts(
                json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}})
            ),
            "type T = [string, ...boolean[]];\n"
        );
        assert_eq!(
            ts(
                json!({"type": "array", "items": [{"type": "string"}, {"type": "number"}], "minItems": 1})
            ),
            "type T = [string, number?];\n"
        );
    }

    #[test]
    fn additional_properties_become_index_signatures() {
        assert_eq!(
            ts(json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "type T = Record<string, number>;\n"
        );
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}})
            ),
            "type T = { a?: string } & Record<string, number>;\n"
        );
        assert_eq!(
            ts(
                json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}})
            ),
            "type T = { a?: string };\n"
        );
    }

    #[test]
    fn property_names_needing_quotes() {
        let out = ts(
            json!({"type": "object", "properties": {"content-type": {"type": "string"}, "+1": {"type": "number"}, "ok_$": {"type": "null"}, "a\"b\u{2028}": {"type": "string"}, "class": {"type": "string"}}}),
        );
        assert!(out.contains("\"content-type\"?: string"), "{out}");
        assert!(out.contains("\"+1\"?: number"), "{out}");
        assert!(out.contains("ok_$?: null"), "{out}");
        assert!(out.contains("\"a\\\"b\\u2028\"?: string"), "{out}");
        assert!(out.contains("class?: string"), "{out}");
    }

    #[test]
    fn docs_become_comments() {
        let out = ts(
            json!({"type": "object", "description": "A thing.", "properties": {
                "when": {"type": "string", "format": "date-time", "description": "Ends */ here\u{2028}now"},
                "n": {"type": "integer", "default": 30, "example": 5}
            }}),
        );
        assert_eq!(
            out,
            "/** A thing. */\ntype T = {\n  /** Ends *\\/ here\\u2028now @format date-time */\n  when?: string;\n  /** @default 30 @example 5 */\n  n?: number;\n};\n"
        );
    }

    #[test]
    fn refs_become_named_types_and_cycles_terminate() {
        let schema = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/definitions/node"}, "me": {"$ref": "#"}},
            "definitions": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/node"}}, "label": {"$ref": "#/$defs/label"}}}},
            "$defs": {"label": {"type": "string"}}
        });
        let out = ts(schema);
        assert_eq!(
            out,
            "type T = { root?: Node; me?: T };\ntype Node = { children?: Node[]; label?: Label };\ntype Label = string;\n"
        );
    }

    #[test]
    fn openapi_component_refs_resolve_against_the_document() {
        let spec = json!({"components": {"schemas": {"simple-user": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]}}}});
        let schema =
            json!({"type": "array", "items": {"$ref": "#/components/schemas/simple-user"}});
        assert_eq!(
            schema_to_ts("Users", &schema, &spec),
            "type Users = SimpleUser[];\ntype SimpleUser = { login: string };\n"
        );
    }

    #[test]
    fn refs_pointing_nowhere_or_outside_are_unknown() {
        assert_eq!(
            ts(json!({"$ref": "#/definitions/missing"})),
            "type T = unknown;\n"
        );
        assert_eq!(
            ts(json!({"$ref": "https://example.com/s.json#/a"})),
            "type T = unknown;\n"
        );
        assert_eq!(ts(json!({"$ref": 42})), "type T = unknown;\n");
        assert_eq!(
            ts(json!({"properties": {"a": {"$ref": "other.json"}}})),
            "type T = { a?: unknown };\n"
        );
    }

    #[test]
    fn mutual_recursion_and_alias_names_avoid_clashes() {
        let schema = json!({"$defs": {
            "a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}},
            "b": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}},
            "Promise": {"type": "string"}
        }, "anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/Promise"}]});
        let out = ts(schema);
        assert_eq!(out, "type T = A | Promise2;\ntype A = { b?: B };\ntype Promise2 = string;\ntype B = { a?: A };\n");
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({"type": "object", "properties": {"x": schema}});
        }
        let out = ts(schema);
        assert!(out.contains("unknown"));
        assert!(out.len() < 20_000, "{}", out.len());
    }

    #[test]
    fn schemas_that_are_not_objects() {
        for schema in [json!(null), json!(3), json!("string"), json!([1, 2])] {
            assert_eq!(ts(schema), "type T = unknown;\n");
        }
        assert_eq!(ts(json!({"type": 7})), "type T = unknown;\n");
        assert_eq!(ts(json!({"type": "date"})), "type T = unknown;\n");
        assert_eq!(
            ts(json!({"properties": 5})),
            "type T = Record<string, unknown>;\n"
        );
        assert_eq!(ts(json!({"enum": "x"})), "type T = unknown;\n");
    }

    #[test]
    fn output_is_deterministic() {
        let schema = json!({"type": "object", "properties": {"z": {"$ref": "#/$defs/z"}, "a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}, "z": {"type": "number"}}});
        let first = ts(schema.clone());
        for _ in 0..5 {
            assert_eq!(ts(schema.clone()), first);
        }
    }

    #[test]
    fn type_names() {
        assert_eq!(type_name_from("simple-user"), "SimpleUser");
        assert_eq!(type_name_from("list_pull_requests"), "ListPullRequests");
        assert_eq!(type_name_from("3d"), "T3d");
        assert_eq!(type_name_from(""), "T");
    }
}
