//! Durable values: the size limit, canonical comparison, and result truncation.

use serde_json::Value;

mod truncate;

pub use truncate::{
    truncate_outcome, truncate_result, truncate_text, truncate_value, TruncateOptions, Truncated,
    CHARS_PER_TOKEN, DEFAULT_MAX_RESULT_TOKENS, MAX_BUDGET_CHARS, MIN_BUDGET_CHARS,
};

/// The most characters one durable value may take serialised (as JavaScript counts them).
pub const MAX_DURABLE_VALUE_CHARS: usize = 1_000_000;

/// The deepest nesting of arrays and objects one durable value may have: what the stores' JSON
/// readers take back (they refuse 128 opening brackets).
pub const MAX_DURABLE_DEPTH: usize = 127;

/// The default number of terminal executions kept.
pub const DEFAULT_MAX_EXECUTIONS: usize = 50;

/// The default age after which paused and running executions expire (24 h).
pub const DEFAULT_PAUSED_TTL_MS: i64 = 86_400_000;

/// The length of `value` serialised as JSON, in UTF-16 code units (JavaScript's `length`).
pub fn serialized_len(value: &Value) -> usize {
    json_size(value).1
}

/// The size of `value` serialised as compact JSON: its bytes, and its length in UTF-16 code
/// units; counted as it is written, so nothing is allocated. A value nested deeper than
/// serde's recursion allows is not measured: check [`nested_deeper_than`] first.
pub fn json_size(value: &Value) -> (u64, usize) {
    let mut count = JsonCount::default();
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    (count.bytes, count.units)
}

/// The size of a durable value (see [`json_size`]), or `None` when it nests more than
/// `limit` levels deep (checked first, without recursion).
pub fn durable_size(value: &Value, limit: usize) -> Option<(u64, usize)> {
    if nested_deeper_than(value, limit) {
        return None;
    }
    Some(json_size(value))
}

/// Bytes and UTF-16 code units of the UTF-8 text written to it.
#[derive(Default)]
struct JsonCount {
    bytes: u64,
    units: usize,
}

impl std::io::Write for JsonCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len() as u64;
        if buf.is_ascii() {
            self.units += buf.len();
        } else {
            // A continuation byte adds nothing; a four-byte sequence is a surrogate pair.
            for &b in buf {
                self.units += match b {
                    0x80..=0xBF => 0,
                    0xF0..=0xFF => 2,
                    _ => 1,
                };
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length of `s` in UTF-16 code units.
pub fn js_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

/// Whether `value` nests arrays and objects more than `limit` levels deep; walks without
/// recursion, and stops at the first level past the limit.
pub fn nested_deeper_than(value: &Value, limit: usize) -> bool {
    /// The members of one array or object still to visit.
    enum Members<'a> {
        Items(std::slice::Iter<'a, Value>),
        Fields(serde_json::map::Values<'a>),
    }
    fn members(value: &Value) -> Option<Members<'_>> {
        match value {
            Value::Array(items) => Some(Members::Items(items.iter())),
            Value::Object(map) => Some(Members::Fields(map.values())),
            _ => None,
        }
    }
    let Some(top) = members(value) else {
        return false;
    };
    if limit == 0 {
        return true;
    }
    let mut open = vec![top];
    while let Some(current) = open.last_mut() {
        let next = match current {
            Members::Items(items) => items.next(),
            Members::Fields(fields) => fields.next(),
        };
        match next {
            Some(item) => {
                if let Some(inner) = members(item) {
                    if open.len() >= limit {
                        return true;
                    }
                    open.push(inner);
                }
            }
            None => {
                open.pop();
            }
        }
    }
    false
}

/// Drops `value` without recursion, however deep it nests (dropping a value nested thousands
/// of levels deep the usual way would overflow the stack).
pub fn dismantle(value: Value) {
    let mut rest = vec![value];
    while let Some(item) = rest.pop() {
        match item {
            Value::Array(items) => rest.extend(items),
            Value::Object(map) => rest.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
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
    fn depth_is_measured_without_recursion() {
        // Built by moving each level in (`json!` would copy it, recursively).
        let nest = |n: usize| {
            let mut v = json!(1);
            for i in 0..n {
                v = if i % 2 == 0 {
                    Value::Array(vec![v])
                } else {
                    Value::Object(std::iter::once(("k".to_string(), v)).collect())
                };
            }
            v
        };
        for (depth, limit, deeper) in [
            (0, 0, false),
            (1, 0, true),
            (1, 1, false),
            (127, 127, false),
            (128, 127, true),
            (3, 2, true),
        ] {
            assert_eq!(
                nested_deeper_than(&nest(depth), limit),
                deeper,
                "{depth} levels, limit {limit}"
            );
        }
        assert!(!nested_deeper_than(&json!([[1], [2], {"a": [3]}]), 3));
        assert!(nested_deeper_than(&json!([[1], [2], {"a": [3]}]), 2));
        // 100,000 levels: no stack overflow, walking it or dropping it.
        let deep = nest(100_000);
        assert!(nested_deeper_than(&deep, MAX_DURABLE_DEPTH));
        dismantle(deep);
    }

    #[test]
    fn js_length_counts_utf16_units() {
        assert_eq!(js_len("abc"), 3);
        assert_eq!(js_len("é"), 1);
        assert_eq!(js_len("😀"), 2);
        assert_eq!(serialized_len(&json!("ab")), 4);
    }

    #[test]
    fn json_size_is_what_serialising_writes() {
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({"a": [1, -2, 3.5, 1e300, 0.1], "b": {"c": null, "d": true}}),
            json!("quote \" backslash \\ tab \t nl \n ctl \u{1} del \u{7f}"),
            json!({"é": "😀 and ü, 日本", "k\u{0}": ["\u{1f600}", ""]}),
            json!([u64::MAX, i64::MIN, 123456789.12345679]),
        ];
        for value in values {
            let text = serde_json::to_string(&value).unwrap();
            assert_eq!(
                json_size(&value),
                (text.len() as u64, js_len(&text)),
                "{text}"
            );
            assert_eq!(durable_size(&value, 127), Some(json_size(&value)));
        }
        assert_eq!(durable_size(&json!([[[1]]]), 2), None);
    }
}
