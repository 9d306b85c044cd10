//! The words of a method's input schema that search reads: its top-level property names, and
//! as prose the names of nested properties and what each property's description says
//! (`delete_relations` takes relations whose `from` is "the name of the entity where the
//! relation starts": a search for relations between entities finds it).

use serde_json::Value;

/// Deepest nesting of properties read for prose (the input object's own properties are 1).
const MAX_PROSE_DEPTH: usize = 4;
/// Most characters of prose kept per method, so a huge schema costs the index little.
const MAX_PROSE_CHARS: usize = 2_000;

/// The names of a JSON Schema's top-level properties (none when it has no `properties`).
pub(crate) fn parameter_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Nested property names and property descriptions, as one text (at most
/// [`MAX_PROSE_CHARS`], cut at a word).
pub(crate) fn parameter_prose(schema: &Value) -> String {
    let mut out = String::new();
    collect(schema, 1, &mut out);
    if out.len() > MAX_PROSE_CHARS {
        let mut end = MAX_PROSE_CHARS;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        let end = out[..end].rfind(' ').unwrap_or(end);
        out.truncate(end);
    }
    out
}

/// Appends the prose of `schema`'s properties at `depth` (and below), in schema order.
fn collect(schema: &Value, depth: usize, out: &mut String) {
    if depth > MAX_PROSE_DEPTH || out.len() > MAX_PROSE_CHARS {
        return;
    }
    if let Some(items) = schema.get("items") {
        collect(items, depth, out);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect(branch, depth, out);
        }
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if depth > 1 {
            push(out, name);
        }
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            push(out, description);
        }
        collect(property, depth + 1, out);
    }
}

/// Appends `text` after a separator.
fn push(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push_str(". ");
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_names_and_descriptions_are_prose() {
        let schema = json!({"type": "object", "properties": {
            "relations": {"type": "array", "description": "Relations to delete",
                "items": {"type": "object", "properties": {
                    "from": {"type": "string", "description": "The entity where it starts"}}}}}});
        assert_eq!(parameter_names(&schema), ["relations"]);
        assert_eq!(
            parameter_prose(&schema),
            "Relations to delete. from. The entity where it starts"
        );
        assert_eq!(parameter_prose(&json!({"type": "string"})), "");
    }

    #[test]
    fn prose_is_bounded() {
        let long = "word ".repeat(2_000);
        let schema = json!({"properties": {"a": {"description": long}}});
        assert!(parameter_prose(&schema).len() <= MAX_PROSE_CHARS);
    }
}
