//! JSON Schema → TypeScript declarations. Never fails: what cannot be expressed is `unknown`.

use super::doc_comment::{render_doc, schema_doc_lines};
use super::names::{is_standard_global, STANDARD_GLOBALS};
use super::refs::{last_segment, resolve_ref};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

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

/// How tightly a type expression binds, to know when it needs parentheses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Precedence {
    Union,
    Intersection,
    Primary,
}

/// One rendered type expression.
#[derive(Debug, Clone)]
struct Ty {
    text: String,
    precedence: Precedence,
    /// Whether the text spans several lines (then enclosing objects do too).
    multiline: bool,
}

impl Ty {
    fn primary(text: impl Into<String>) -> Ty {
        let text = text.into();
        let multiline = text.contains('\n');
        Ty {
            text,
            precedence: Precedence::Primary,
            multiline,
        }
    }

    fn unknown() -> Ty {
        Ty::primary("unknown")
    }

    fn never() -> Ty {
        Ty::primary("never")
    }

    fn is_unknown(&self) -> bool {
        self.text == "unknown"
    }

    fn at_least(&self, precedence: Precedence) -> String {
        if self.precedence < precedence {
            format!("({})", self.text)
        } else {
            self.text.clone()
        }
    }
}

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

    fn expr(&mut self, schema: &'a Value, root: &'a Value, depth: usize, indent: usize) -> Ty {
        if depth > MAX_SCHEMA_DEPTH {
            return Ty::unknown();
        }
        let obj = match schema {
            Value::Bool(true) => return Ty::unknown(),
            Value::Bool(false) => return Ty::never(),
            Value::Object(obj) => obj,
            _ => return Ty::unknown(),
        };
        let ty = self.expr_of_object(obj, root, depth, indent);
        if obj.get("nullable") == Some(&Value::Bool(true)) {
            return union(vec![ty, Ty::primary("null")]);
        }
        ty
    }

    fn expr_of_object(
        &mut self,
        obj: &'a Map<String, Value>,
        root: &'a Value,
        depth: usize,
        indent: usize,
    ) -> Ty {
        if let Some(reference) = obj.get("$ref") {
            return match reference.as_str() {
                Some(reference) => self.reference(reference, root),
                None => Ty::unknown(),
            };
        }
        if let Some(value) = obj.get("const") {
            return literal(value).map_or_else(Ty::unknown, Ty::primary);
        }
        if let Some(values) = obj.get("enum") {
            let Some(values) = values.as_array() else {
                return Ty::unknown();
            };
            let members: Option<Vec<Ty>> =
                values.iter().map(|v| literal(v).map(Ty::primary)).collect();
            return members.map_or_else(Ty::unknown, union);
        }
        let mut parts = Vec::new();
        if let Some(base) = self.base_type(obj, root, depth, indent) {
            parts.push(base);
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(members) = obj.get(keyword).and_then(Value::as_array) {
                let members = members
                    .iter()
                    .map(|m| self.expr(m, root, depth + 1, indent))
                    .collect();
                parts.push(union(members));
            }
        }
        if let Some(members) = obj.get("allOf").and_then(Value::as_array) {
            for member in members {
                parts.push(self.expr(member, root, depth + 1, indent));
            }
        }
        intersection(parts)
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

    fn base_type(
        &mut self,
        obj: &'a Map<String, Value>,
        root: &'a Value,
        depth: usize,
        indent: usize,
    ) -> Option<Ty> {
        match obj.get("type") {
            Some(Value::String(t)) => Some(self.single_type(t, obj, root, depth, indent)),
            Some(Value::Array(types)) => {
                let members = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some(t) => self.single_type(t, obj, root, depth, indent),
                        None => Ty::unknown(),
                    })
                    .collect();
                Some(union(members))
            }
            Some(_) => Some(Ty::unknown()),
            None => {
                let is_object = ["properties", "additionalProperties", "patternProperties"]
                    .iter()
                    .any(|k| obj.contains_key(*k));
                let is_array = obj.contains_key("items") || obj.contains_key("prefixItems");
                if is_object {
                    Some(self.object_type(obj, root, depth, indent))
                } else if is_array {
                    Some(self.array_type(obj, root, depth, indent))
                } else {
                    None
                }
            }
        }
    }

    fn single_type(
        &mut self,
        name: &str,
        obj: &'a Map<String, Value>,
        root: &'a Value,
        depth: usize,
        indent: usize,
    ) -> Ty {
        match name {
            "string" => Ty::primary("string"),
            "number" | "integer" => Ty::primary("number"),
            "boolean" => Ty::primary("boolean"),
            "null" => Ty::primary("null"),
            "array" => self.array_type(obj, root, depth, indent),
            "object" => self.object_type(obj, root, depth, indent),
            _ => Ty::unknown(),
        }
    }

    fn array_type(
        &mut self,
        obj: &'a Map<String, Value>,
        root: &'a Value,
        depth: usize,
        indent: usize,
    ) -> Ty {
        let (prefix, rest) = match (obj.get("prefixItems"), obj.get("items")) {
            (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
            (_, Some(Value::Array(prefix))) => (Some(prefix), obj.get("additionalItems")),
            (_, items) => (None, items),
        };
        let Some(prefix) = prefix else {
            let item = match rest {
                Some(items) => self.expr(items, root, depth + 1, indent),
                None => Ty::unknown(),
            };
            return Ty::primary(format!("{}[]", item.at_least(Precedence::Primary)));
        };
        if prefix.len() > MAX_TUPLE_ITEMS {
            return Ty::primary("unknown[]");
        }
        let min_items = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let has_min = obj.contains_key("minItems");
        let mut elements = Vec::with_capacity(prefix.len() + 1);
        for (i, item) in prefix.iter().enumerate() {
            let ty = self.expr(item, root, depth + 1, indent).text;
            let optional = has_min && i >= min_items;
            elements.push(if optional { format!("{ty}?") } else { ty });
        }
        match rest {
            None | Some(Value::Bool(false)) => {}
            Some(rest) => {
                let ty = self.expr(rest, root, depth + 1, indent);
                elements.push(format!("...{}[]", ty.at_least(Precedence::Primary)));
            }
        }
        Ty::primary(format!("[{}]", elements.join(", ")))
    }

    fn object_type(
        &mut self,
        obj: &'a Map<String, Value>,
        root: &'a Value,
        depth: usize,
        indent: usize,
    ) -> Ty {
        let required: HashSet<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut members = Vec::new();
        let mut multiline = false;
        if let Some(properties) = obj.get("properties").and_then(Value::as_object) {
            for (key, schema) in properties {
                let ty = self.expr(schema, root, depth + 1, indent + 1);
                let optional = if required.contains(key.as_str()) {
                    ""
                } else {
                    "?"
                };
                let doc = schema_doc_lines(schema);
                multiline |= ty.multiline || !doc.is_empty();
                members.push((doc, format!("{}{optional}: {}", property_key(key), ty.text)));
            }
        }
        let mut index_members = Vec::new();
        if let Some(patterns) = obj.get("patternProperties").and_then(Value::as_object) {
            for schema in patterns.values() {
                index_members.push(self.expr(schema, root, depth + 1, indent));
            }
        }
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(_)) => {}
            Some(schema) => index_members.push(self.expr(schema, root, depth + 1, indent)),
        }
        let index = if index_members.is_empty() {
            None
        } else {
            let ty = union(index_members);
            Some(Ty::primary(format!("Record<string, {}>", ty.text)))
        };
        if members.is_empty() {
            return index.unwrap_or_else(|| Ty::primary("Record<string, unknown>"));
        }
        let one_line = format!(
            "{{ {} }}",
            members
                .iter()
                .map(|(_, m)| m.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
        let literal = if !multiline && one_line.len() <= INLINE_OBJECT_CHARS {
            Ty::primary(one_line)
        } else {
            let pad = "  ".repeat(indent + 1);
            let mut text = String::from("{\n");
            for (doc, member) in &members {
                text.push_str(&render_doc(doc, &pad));
                text.push_str(&format!("{pad}{member};\n"));
            }
            text.push_str(&"  ".repeat(indent));
            text.push('}');
            Ty::primary(text)
        };
        match index {
            Some(index) => intersection(vec![literal, index]),
            None => literal,
        }
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

/// A PascalCase type name from any text: `simple-user` gives `SimpleUser`.
pub fn type_name_from(text: &str) -> String {
    let mut out = String::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// A property name as TypeScript accepts it: bare when it is an identifier, quoted otherwise.
pub fn property_key(key: &str) -> String {
    let mut chars = key.chars();
    let is_identifier = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if is_identifier {
        key.to_string()
    } else {
        string_literal(key)
    }
}

fn string_literal(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_else(|_| "\"\"".to_string())
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn literal(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(string_literal(s)),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn union(members: Vec<Ty>) -> Ty {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for member in members {
        if member.is_unknown() {
            return Ty::unknown();
        }
        if member.text == "never" || !seen.insert(member.text.clone()) {
            continue;
        }
        kept.push(member);
    }
    match kept.len() {
        0 => Ty::never(),
        1 => kept.pop().unwrap_or_else(Ty::never),
        _ => Ty {
            multiline: kept.iter().any(|t| t.multiline),
            text: kept
                .iter()
                .map(|t| t.text.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            precedence: Precedence::Union,
        },
    }
}

fn intersection(members: Vec<Ty>) -> Ty {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for member in members {
        if member.text == "never" {
            return Ty::never();
        }
        if member.is_unknown() || !seen.insert(member.text.clone()) {
            continue;
        }
        kept.push(member);
    }
    match kept.len() {
        0 => Ty::unknown(),
        1 => kept.pop().unwrap_or_else(Ty::unknown),
        _ => Ty {
            multiline: kept.iter().any(|t| t.multiline),
            text: kept
                .iter()
                .map(|t| t.at_least(Precedence::Intersection))
                .collect::<Vec<_>>()
                .join(" & "),
            precedence: Precedence::Intersection,
        },
    }
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
