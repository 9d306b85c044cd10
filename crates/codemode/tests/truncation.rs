//! Structural truncation over arbitrary JSON: the result is valid JSON within the budget, and
//! equal to the input whenever the input fits.

use codemode::value::{serialized_len, truncate_value, TruncateOptions, MIN_BUDGET_CHARS};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Arbitrary JSON: every scalar kind (astral and control characters in strings), nested arrays
/// and objects, some of them long.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        ".{0,40}".prop_map(Value::String),
        (0usize..2_000).prop_map(|n| Value::String("é😀x".repeat(n))),
    ];
    leaf.prop_recursive(8, 1_500, 40, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..60).prop_map(Value::Array),
            prop::collection::vec((".{0,12}", inner), 0..40)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn truncation_is_valid_bounded_and_lossless_when_it_fits(
        value in json(),
        budget in MIN_BUDGET_CHARS..30_000usize,
    ) {
        let options = TruncateOptions { max_chars: Some(budget), max_tokens: None };
        let out = truncate_value(value.clone(), options);
        let text = serde_json::to_string(&out.value).unwrap();
        let reparsed: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&reparsed, &out.value);
        prop_assert!(serialized_len(&out.value) <= budget, "{} > {budget}", serialized_len(&out.value));
        prop_assert_eq!(out.kept_chars, serialized_len(&out.value));
        prop_assert_eq!(out.original_chars, serialized_len(&value));
        if serialized_len(&value) <= budget {
            prop_assert_eq!(&out.value, &value);
            prop_assert!(out.note.is_none());
        } else {
            prop_assert!(out.note.is_some());
            // Same shape at the top: an object stays an object, an array an array.
            let same_kind = matches!(
                (&value, &out.value),
                (Value::Array(_), Value::Array(_))
                    | (Value::Object(_), Value::Object(_))
                    | (Value::String(_), Value::String(_))
                    | (Value::Array(_) | Value::Object(_), Value::String(_))
            );
            prop_assert!(same_kind, "{} became {}", value, out.value);
        }
    }
}
