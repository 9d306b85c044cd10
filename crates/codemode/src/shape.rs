//! Reshaping one tool's results before the code sees them, from configuration: a JSON pointer
//! pick, or a field allow-list. The shaped value is what the log keeps and replays.

use serde::Deserialize;
use serde_json::{Map, Value};

/// How a tool's results are cut down before the code sees them.
///
/// ```toml
/// [tools.issues_list]
/// result = { fields = ["number", "title", "state"] }   # keep these keys (of each item of a list)
///
/// [tools.search_issues]
/// result = { pick = "/items" }                         # keep only what this JSON pointer names
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ResultShape {
    /// The part of the result a JSON pointer (RFC 6901, e.g. `/items`) names.
    Pick(String),
    /// Only these keys of an object, or of each object in an array.
    Fields(Vec<String>),
}

impl ResultShape {
    /// Why this shape cannot be used (a pointer that does not start with `/`, no fields).
    pub fn problem(&self) -> Option<String> {
        match self {
            ResultShape::Pick(p) if !p.is_empty() && !p.starts_with('/') => Some(format!(
                "result.pick = {p:?} is not a JSON pointer; write it as \"/{p}\" (RFC 6901: \"/items/0/name\")"
            )),
            ResultShape::Fields(f) if f.is_empty() => {
                Some("result.fields is empty; name at least one key to keep".into())
            }
            _ => None,
        }
    }

    /// The shaped value, or why `value` does not fit the shape (the caller then keeps it whole).
    pub fn apply(&self, value: &Value) -> Result<Value, String> {
        match self {
            ResultShape::Pick(pointer) => value
                .pointer(pointer)
                .cloned()
                .ok_or_else(|| format!("the result has nothing at {pointer:?}")),
            ResultShape::Fields(keys) => match value {
                Value::Object(map) => Ok(Value::Object(keep(map, keys))),
                Value::Array(items) => items
                    .iter()
                    .map(|item| match item {
                        Value::Object(map) => Ok(Value::Object(keep(map, keys))),
                        other => Err(format!(
                            "an item of the result is not an object ({}), so fields cannot be picked",
                            kind(other)
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array),
                other => Err(format!(
                    "the result is not an object or a list of objects ({}), so fields cannot be picked",
                    kind(other)
                )),
            },
        }
    }
}

fn keep(map: &Map<String, Value>, keys: &[String]) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| keys.iter().any(|w| w == *k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::ResultShape;
    use serde_json::json;

    #[test]
    fn pick_and_fields_cut_results_and_say_why_when_they_cannot() {
        let page = json!({"total": 2, "items": [{"id": 1, "name": "a", "body": "long"}, {"id": 2, "name": "b"}]});
        let pick = ResultShape::Pick("/items/1/name".into());
        assert_eq!(pick.apply(&page), Ok(json!("b")));
        assert!(ResultShape::Pick("/nope".into())
            .apply(&page)
            .unwrap_err()
            .contains("nothing at \"/nope\""));
        let fields = ResultShape::Fields(vec!["id".into(), "name".into()]);
        assert_eq!(
            fields.apply(&page["items"]),
            Ok(json!([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]))
        );
        assert_eq!(fields.apply(&page), Ok(json!({})));
        assert!(fields.apply(&json!([1])).unwrap_err().contains("a number"));
        assert!(fields.apply(&json!("x")).unwrap_err().contains("a string"));
    }

    #[test]
    fn config_shapes_parse_and_bad_ones_are_named() {
        let pick: ResultShape = serde_json::from_value(json!({"pick": "/items"})).unwrap();
        assert_eq!(pick, ResultShape::Pick("/items".into()));
        assert!(ResultShape::Pick("items".into())
            .problem()
            .unwrap()
            .contains("\"/items\""));
        assert!(ResultShape::Fields(vec![]).problem().is_some());
        assert_eq!(ResultShape::Pick(String::new()).problem(), None);
    }
}
