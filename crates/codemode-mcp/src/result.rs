//! An MCP `CallToolResult` as the value (or error) the model's code receives.
//!
//! In order: `isError` becomes a thrown error; `structuredContent` is returned when present;
//! otherwise text-only content is joined, and parsed when it is JSON; mixed content is returned
//! as its parts, as they came.

use codemode::ToolError;
use serde_json::Value;

/// The value or error for one call result, given as JSON (the wire form).
pub fn map_result(result: Value) -> Result<Value, ToolError> {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let content: Vec<Value> = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let texts: Option<Vec<&str>> = content
        .iter()
        .map(|c| match c.get("type").and_then(Value::as_str) {
            Some("text") => c.get("text").and_then(Value::as_str),
            _ => None,
        })
        .collect();
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if is_error {
        let message = match (&texts, structured) {
            (Some(t), _) if !t.is_empty() => t.join("\n"),
            (_, Some(s)) => s.to_string(),
            _ if !content.is_empty() => Value::Array(content.clone()).to_string(),
            _ => "the tool reported an error".to_string(),
        };
        return Err(ToolError::new(message));
    }
    if let Some(s) = structured {
        return Ok(s.clone());
    }
    match texts {
        Some(t) if t.is_empty() => Ok(Value::Null),
        Some(t) => {
            let text = t.join("\n");
            Ok(serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)))
        }
        None => Ok(Value::Array(content)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_are_thrown_with_their_text() {
        let err = map_result(
            json!({"isError": true, "content": [{"type": "text", "text": "no such repo"}]}),
        )
        .unwrap_err();
        assert_eq!(err.0, "no such repo");
        let err = map_result(json!({"isError": true})).unwrap_err();
        assert_eq!(err.0, "the tool reported an error");
    }

    #[test]
    fn structured_content_first() {
        let v = map_result(json!({
            "content": [{"type": "text", "text": "{\"a\": 1}"}],
            "structuredContent": {"a": 2}
        }))
        .unwrap();
        assert_eq!(v, json!({"a": 2}));
    }

    #[test]
    fn text_is_parsed_when_json() {
        let one = |t: &str| map_result(json!({"content": [{"type": "text", "text": t}]})).unwrap();
        assert_eq!(one("{\"id\": 7}"), json!({"id": 7}));
        assert_eq!(one("[1, 2]"), json!([1, 2]));
        assert_eq!(one("hello"), json!("hello"));
        assert_eq!(one("42"), json!(42));
        assert_eq!(one(" \"quoted\" "), json!("quoted"));
        let two = map_result(json!({"content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}
        ]}))
        .unwrap();
        assert_eq!(two, json!("a\nb"));
        assert_eq!(map_result(json!({"content": []})).unwrap(), Value::Null);
    }

    #[test]
    fn mixed_content_keeps_its_parts() {
        let parts = json!([
            {"type": "text", "text": "a picture"},
            {"type": "image", "data": "iVBOR", "mimeType": "image/png"}
        ]);
        assert_eq!(
            map_result(json!({"content": parts.clone()})).unwrap(),
            parts
        );
    }
}
