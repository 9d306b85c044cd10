//! A schema's keywords read into a type expression: `$ref`, `const`, `enum`, `type`,
//! objects, arrays and tuples, `anyOf`/`oneOf`/`allOf`, `nullable`.

use super::super::doc_comment::{render_doc, schema_doc_lines};
use super::ty::{intersection, literal, property_key, union, Precedence, Ty};
use super::{TypeScriptBuilder, INLINE_OBJECT_CHARS, MAX_SCHEMA_DEPTH, MAX_TUPLE_ITEMS};
use serde_json::{Map, Value};
use std::collections::HashSet;

impl<'a> TypeScriptBuilder<'a> {
    /// The type expression of `schema` at `depth`, its objects indented `indent` levels.
    pub(super) fn expr(
        &mut self,
        schema: &'a Value,
        root: &'a Value,
        depth: usize,
        indent: usize,
    ) -> Ty {
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
