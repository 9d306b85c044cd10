//! Property test: the TypeScript declarations generated from any JSON Schema — odd property
//! names, reserved words, comment terminators in descriptions, `$ref`s that point nowhere,
//! cycles, every combinator — parse as a TypeScript declaration file with oxc, the parser
//! the sandbox strips types with. `PROPTEST_CASES` sets the number of cases.

use codemode::discovery::{schema_to_ts, type_name_from};
use oxc::allocator::Allocator;
use oxc::parser::Parser;
use oxc::span::SourceType;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Names a model or an API might use for a property, type or definition.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-zA-Z0-9_]{0,8}",
        Just("default".to_string()),
        Just("class".to_string()),
        Just("constructor".to_string()),
        Just("__proto__".to_string()),
        Just("a-b".to_string()),
        Just("1st".to_string()),
        Just("with space".to_string()),
        Just("quote\"d".to_string()),
        Just("back\\slash".to_string()),
        Just("*/ end".to_string()),
        Just("@type".to_string()),
        Just("$ref".to_string()),
        Just("ünï".to_string()),
        Just("".to_string()),
        "\\PC{0,6}",
    ]
}

/// Descriptions, including ones that would end a doc comment.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z ]{0,20}",
        Just("ends a comment */ here".to_string()),
        Just("line\nbreak\r\nand `ticks`".to_string()),
        "\\PC{0,12}",
    ]
}

fn scalar_type() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("string")),
        Just(json!("number")),
        Just(json!("integer")),
        Just(json!("boolean")),
        Just(json!("null")),
        Just(json!("object")),
        Just(json!("array")),
        Just(json!(["string", "null"])),
        Just(json!("no-such-type")),
        Just(json!(7)),
    ]
}

fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        (-1e9f64..1e9f64).prop_map(Value::from),
        name().prop_map(Value::from),
        Just(Value::Null),
    ]
}

/// A JSON Schema (or something shaped like one), nested a few levels.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        scalar_type().prop_map(|t| json!({ "type": t })),
        prop::collection::vec(literal(), 0..4).prop_map(|e| json!({ "enum": e })),
        literal().prop_map(|c| json!({ "const": c })),
        name().prop_map(|n| json!({ "$ref": format!("#/$defs/{n}") })),
        Just(json!({ "$ref": "#" })),
        Just(json!({ "$ref": "https://example.com/x.json" })),
        Just(json!(true)),
        Just(json!({})),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            (
                prop::collection::vec((name(), inner.clone()), 0..5),
                prop::collection::vec(name(), 0..3),
                prop::option::of(inner.clone()),
                prop::option::of(text()),
            )
                .prop_map(|(props, required, additional, description)| {
                    let mut o = Map::new();
                    o.insert("type".into(), json!("object"));
                    let props: Map<String, Value> = props.into_iter().collect();
                    o.insert("properties".into(), Value::Object(props));
                    o.insert("required".into(), json!(required));
                    if let Some(a) = additional {
                        o.insert("additionalProperties".into(), a);
                    }
                    if let Some(d) = description {
                        o.insert("description".into(), Value::String(d));
                    }
                    Value::Object(o)
                }),
            inner
                .clone()
                .prop_map(|items| json!({ "type": "array", "items": items })),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "anyOf": v })),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "oneOf": v })),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "allOf": v })),
            prop::collection::vec((name(), inner.clone()), 0..4).prop_map(|defs| {
                let defs: Map<String, Value> = defs.into_iter().collect();
                json!({ "$ref": "#/$defs/a", "$defs": defs })
            }),
            (inner, text()).prop_map(|(mut s, d)| {
                if let Value::Object(o) = &mut s {
                    o.insert("description".into(), Value::String(d));
                    o.insert("nullable".into(), json!(true));
                }
                s
            }),
        ]
    })
}

/// The oxc diagnostics of `text` parsed as a declaration file, if any.
fn parse_errors(text: &str) -> Vec<String> {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, text, SourceType::d_ts()).parse();
    let mut errors: Vec<String> = ret.diagnostics.iter().map(|d| d.to_string()).collect();
    if ret.panicked && errors.is_empty() {
        errors.push("the parser gave up".into());
    }
    errors
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2000)))]

    #[test]
    fn declarations_from_any_schema_parse(schema in schema(), method in name()) {
        // Type names come from method names as the catalogue makes them.
        let ts = schema_to_ts(&type_name_from(&method), &schema, &schema);
        let errors = parse_errors(&ts);
        prop_assert!(errors.is_empty(), "{errors:?}\nschema: {schema}\n---\n{ts}");
    }
}

#[test]
fn the_checker_sees_a_broken_declaration() {
    assert!(!parse_errors("type T = { a: ; };").is_empty());
    assert!(parse_errors("type T = { a: string };").is_empty());
}
