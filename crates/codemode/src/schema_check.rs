//! A cheap structural check of a JSON Schema: the mistakes that keep a validator from
//! compiling (a keyword whose value has the wrong shape, an unknown type name, a local `$ref`
//! to nothing), found by one walk without compiling anything. A large API has thousands of
//! input schemas; compiling, or checking each against the meta-schema, held hundreds of
//! megabytes. What this walk cannot see (a regular expression that does not compile, a remote
//! `$ref`) is reported when the tool is first called and its validator compiled.

use serde_json::Value;

/// The type names JSON Schema knows.
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];
/// Keywords whose value is one schema.
const ONE: &[&str] = &[
    "not",
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Keywords whose value is an array of schemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value is an object of schemas.
const NAMED: &[&str] = &["properties", "$defs", "definitions", "dependentSchemas"];
/// Keywords whose value is a number.
const NUMBERS: &[&str] = &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
/// Keywords whose value is a non-negative integer.
const COUNTS: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];
/// How deep the walk goes before it calls a schema too deep to check.
const MAX_DEPTH: usize = 256;

/// Why `schema` cannot be compiled to a validator, or `None` when the walk finds nothing.
pub fn schema_problem(schema: &Value) -> Option<String> {
    walk(schema, schema, "#", 0).err()
}

fn walk(root: &Value, schema: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{at}: nested more than {MAX_DEPTH} levels deep"));
    }
    let map = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(map) => map,
        other => {
            return Err(format!(
                "{at}: a schema is an object or a boolean, not {other}"
            ))
        }
    };
    let next = |key: &str| format!("{at}/{key}");
    for (key, value) in map {
        let here = next(key);
        match key.as_str() {
            "type" => check_type(value, &here)?,
            "required" => strings(value, &here)?,
            "enum" if !value.is_array() => return Err(format!("{here}: must be an array")),
            "$ref" => check_ref(root, value, &here)?,
            "items" => match value {
                Value::Array(items) if tuple_items(root) => each(root, items, &here, depth)?,
                Value::Array(_) => {
                    return Err(format!(
                        "{here}: must be one schema (an array of them is `prefixItems` since draft 2020-12; or declare an older draft in `$schema`)"
                    ))
                }
                one => walk(root, one, &here, depth + 1)?,
            },
            "pattern" => check_pattern(value, &here)?,
            "patternProperties" => {
                if let Value::Object(named) = value {
                    for (pattern, sub) in named {
                        check_pattern(&Value::String(pattern.clone()), &here)?;
                        walk(root, sub, &format!("{here}/{pattern}"), depth + 1)?;
                    }
                } else {
                    return Err(format!("{here}: must be an object of schemas, not {value}"));
                }
            }
            "multipleOf" if !value.as_f64().is_some_and(|n| n > 0.0) => {
                return Err(format!("{here}: must be a number above 0, not {value}"))
            }
            k if ONE.contains(&k) => walk(root, value, &here, depth + 1)?,
            k if MANY.contains(&k) => match value {
                Value::Array(items) => each(root, items, &here, depth)?,
                other => return Err(format!("{here}: must be an array of schemas, not {other}")),
            },
            k if NAMED.contains(&k) => match value {
                Value::Object(named) => {
                    for (name, sub) in named {
                        walk(root, sub, &format!("{here}/{name}"), depth + 1)?;
                    }
                }
                other => return Err(format!("{here}: must be an object of schemas, not {other}")),
            },
            // Draft 4 writes `exclusiveMinimum: true` beside `minimum`.
            "exclusiveMinimum" | "exclusiveMaximum" if value.is_boolean() && draft4(root) => {}
            k if NUMBERS.contains(&k) && !value.is_number() => {
                return Err(format!("{here}: must be a number, not {value}"))
            }
            k if COUNTS.contains(&k) && value.as_u64().is_none() => {
                return Err(format!(
                    "{here}: must be a whole number of 0 or more, not {value}"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

fn each(root: &Value, items: &[Value], at: &str, depth: usize) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        walk(root, item, &format!("{at}/{i}"), depth + 1)?;
    }
    Ok(())
}

fn check_type(value: &Value, at: &str) -> Result<(), String> {
    let known = |v: &Value| v.as_str().is_some_and(|t| TYPES.contains(&t));
    let ok = match value {
        Value::Array(names) => !names.is_empty() && names.iter().all(known),
        one => known(one),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{at}: {value} is not a type; a type is one of {} (or an array of them)",
            TYPES.join(", ")
        ))
    }
}

/// Whether the schema declares draft 4.
fn draft4(root: &Value) -> bool {
    root.get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| s.contains("draft-04"))
}

/// Whether the schema declares a draft (4, 6 or 7) in which `items` may be an array.
fn tuple_items(root: &Value) -> bool {
    root.get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            ["draft-04", "draft-06", "draft-07"]
                .iter()
                .any(|d| s.contains(d))
        })
}

/// A regular expression is checked by compiling a one-keyword validator: the dialect is the
/// validator's own, and the validator is small and dropped at once.
fn check_pattern(value: &Value, at: &str) -> Result<(), String> {
    if !value.is_string() {
        return Err(format!("{at}: must be a string, not {value}"));
    }
    jsonschema::validator_for(&serde_json::json!({ "pattern": value }))
        .map(|_| ())
        .map_err(|_| format!("{at}: {value} is not a regular expression the validator accepts"))
}

fn strings(value: &Value, at: &str) -> Result<(), String> {
    match value {
        Value::Array(items) if items.iter().all(Value::is_string) => Ok(()),
        other => Err(format!("{at}: must be an array of strings, not {other}")),
    }
}

/// A `$ref` is a string; one inside the document (`#...`) must point at something.
fn check_ref(root: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(target) = value.as_str() else {
        return Err(format!("{at}: must be a string, not {value}"));
    };
    let Some(pointer) = target.strip_prefix('#') else {
        return Ok(());
    };
    // An anchor (`#name`) is not a pointer; the compiler resolves it.
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Ok(());
    }
    // `%XX` escapes decoded: a pointer may escape characters that way.
    let decoded = percent_encoding::percent_decode_str(pointer).decode_utf8_lossy();
    match root.pointer(&decoded) {
        Some(_) => Ok(()),
        None => Err(format!("{at}: {target:?} points at nothing in the schema")),
    }
}

#[cfg(test)]
mod tests {
    use super::schema_problem;
    use serde_json::json;

    #[test]
    fn what_compiles_passes_and_what_does_not_is_named() {
        let fine = [
            json!(true),
            json!({}),
            json!({"type": ["string", "null"], "minLength": 1}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}}),
            json!({"items": {"type": "string"}, "allOf": [true, {"not": {"type": "null"}}]}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}),
            json!({"pattern": "^[a-z]+$", "patternProperties": {"^x-": {"type": "string"}}}),
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 0, "exclusiveMinimum": true}),
            json!({"$ref": "https://example.com/s.json"}),
            json!({"properties": {"a b": {"$ref": "#/$defs/a%20b"}}, "$defs": {"a b": {}}}),
        ];
        for schema in fine {
            assert_eq!(schema_problem(&schema), None, "{schema}");
            assert!(jsonschema::validator_for(&schema).is_ok() || schema["$ref"].is_string());
        }
        let broken = [
            (json!({"type": "no-such-type"}), "#/type"),
            (json!({"type": 12}), "#/type"),
            (
                json!({"properties": {"n": {"type": []}}}),
                "#/properties/n/type",
            ),
            (json!({"required": "a"}), "#/required"),
            (json!({"allOf": {"type": "string"}}), "#/allOf"),
            (json!({"minLength": -1}), "#/minLength"),
            (json!({"multipleOf": 0}), "#/multipleOf"),
            (json!({"$ref": "#/$defs/Missing"}), "points at nothing"),
            (json!({"items": [{"type": "string"}]}), "prefixItems"),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [1]}),
                "#/items/0",
            ),
            (json!({"pattern": "(("}), "#/pattern"),
            (json!({"exclusiveMinimum": true}), "#/exclusiveMinimum"),
            (
                json!({"patternProperties": {"((": {}}}),
                "#/patternProperties",
            ),
            (json!(3), "not 3"),
        ];
        for (schema, named) in broken {
            let problem = schema_problem(&schema).unwrap_or_default();
            assert!(problem.contains(named), "{schema}: {problem}");
            assert!(jsonschema::validator_for(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn a_schema_too_deep_is_refused_without_overflowing() {
        let mut schema = json!({});
        for _ in 0..1_000 {
            schema = json!({ "not": schema });
        }
        let problem = schema_problem(&schema).unwrap_or_default();
        assert!(problem.contains("levels deep"), "{problem}");
    }
}
