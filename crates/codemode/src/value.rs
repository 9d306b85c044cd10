//! Durable values: the size limit, canonical comparison, and result truncation.

use serde_json::Value;

/// The most characters one durable value may take serialised (as JavaScript counts them).
pub const MAX_DURABLE_VALUE_CHARS: usize = 1_000_000;

/// The default number of terminal executions kept.
pub const DEFAULT_MAX_EXECUTIONS: usize = 50;

/// The default age after which paused and running executions expire (24 h).
pub const DEFAULT_PAUSED_TTL_MS: i64 = 86_400_000;

/// The length of `value` serialised as JSON, in UTF-16 code units (JavaScript's `length`).
pub fn serialized_len(value: &Value) -> usize {
    let s = serde_json::to_string(value).unwrap_or_default();
    js_len(&s)
}

/// The length of `s` in UTF-16 code units.
pub fn js_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

/// Whether two JSON values are equal as JavaScript would see them: object keys in any
/// order, and numbers compared by value (`1` equals `1.0`).
pub fn canonical_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| canonical_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| canonical_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Options for [`truncate_result`] and [`truncate_text`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TruncateOptions {
    /// A character budget; overrides `max_tokens`.
    pub max_chars: Option<usize>,
    /// A token budget at four characters a token (default 6,000).
    pub max_tokens: Option<usize>,
}

impl TruncateOptions {
    fn budget(&self) -> usize {
        self.max_chars
            .unwrap_or_else(|| self.max_tokens.unwrap_or(6_000) * 4)
    }
}

/// Cuts `text` to the budget, with a marker saying how much was cut.
pub fn truncate_text(text: &str, options: TruncateOptions) -> String {
    let budget = options.budget();
    let total = text.chars().count();
    if total <= budget {
        return text.to_string();
    }
    let kept: String = text.chars().take(budget).collect();
    format!(
        "{kept}\n\n--- [truncated: showing {budget} of {total} characters; return a smaller result or filter it in code] ---"
    )
}

/// Leaves small values alone; a value whose JSON exceeds the budget becomes truncated JSON text.
pub fn truncate_result(value: Value, options: TruncateOptions) -> Value {
    let text = match &value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    if text.chars().count() <= options.budget() {
        return value;
    }
    Value::String(truncate_text(&text, options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_equality_ignores_key_order_and_number_form() {
        assert!(canonical_eq(
            &json!({"a": 1, "b": [1.0, "x"]}),
            &json!({"b": [1, "x"], "a": 1.0})
        ));
        assert!(!canonical_eq(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!canonical_eq(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!canonical_eq(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn js_length_counts_utf16_units() {
        assert_eq!(js_len("abc"), 3);
        assert_eq!(js_len("é"), 1);
        assert_eq!(js_len("😀"), 2);
        assert_eq!(serialized_len(&json!("ab")), 4);
    }

    #[test]
    fn truncation_keeps_small_values_and_marks_cut_ones() {
        let small = json!({"a": [1, 2, 3]});
        assert_eq!(
            truncate_result(small.clone(), TruncateOptions::default()),
            small
        );
        let big = json!({"text": "x".repeat(30_000)});
        let cut = truncate_result(big, TruncateOptions::default());
        let s = cut.as_str().unwrap();
        assert!(s.len() < 24_200);
        assert!(s.contains("truncated: showing 24000 of"));
        let opts = TruncateOptions {
            max_chars: Some(10),
            max_tokens: None,
        };
        assert!(truncate_text(&"y".repeat(11), opts).starts_with("yyyyyyyyyy\n"));
    }
}
