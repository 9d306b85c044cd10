//! JSON Schema → TypeScript through the public API: each construct, and bad input.

use codemode::discovery::{bundle_refs, schema_to_ts, TypeScriptBuilder};
use serde_json::{json, Value};

fn ts(schema: Value) -> String {
    schema_to_ts("T", &schema, &schema)
}

#[test]
fn a_realistic_input_schema() {
    let schema = json!({
        "type": "object",
        "description": "Filters for the listing.",
        "properties": {
            "owner": {"type": "string", "description": "The account owner."},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "default": "open"},
            "per_page": {"type": "integer", "minimum": 1, "maximum": 100},
            "labels": {"type": "array", "items": {"type": "string"}},
            "since": {"type": ["string", "null"], "format": "date-time"},
            "sort": {"oneOf": [{"const": "created"}, {"const": "updated"}]}
        },
        "required": ["owner"],
        "additionalProperties": false
    });
    assert_eq!(
        ts(schema),
        "/** Filters for the listing. */\ntype T = {\n  /** The account owner. */\n  owner: string;\n  /** @default \"open\" */\n  state?: \"open\" | \"closed\" | \"all\";\n  per_page?: number;\n  labels?: string[];\n  /** @format date-time */\n  since?: string | null;\n  sort?: \"created\" | \"updated\";\n};\n"
    );
}

#[test]
fn nested_objects_are_indented() {
    let schema = json!({"type": "object", "properties": {"outer": {"type": "object", "properties": {
        "inner": {"type": "string", "description": "Deep."}
    }}}});
    assert_eq!(
        ts(schema),
        "type T = {\n  outer?: {\n    /** Deep. */\n    inner?: string;\n  };\n};\n"
    );
}

#[test]
fn recursive_schema_through_the_root() {
    let schema = json!({"type": "object", "properties": {
        "value": {"type": "number"},
        "children": {"type": "array", "items": {"$ref": "#"}}
    }});
    assert_eq!(ts(schema), "type T = { value?: number; children?: T[] };\n");
}

#[test]
fn self_referencing_definition_without_structure() {
    // A definition that is only a reference to itself: named, never expanded forever.
    let schema = json!({"$defs": {"loop": {"$ref": "#/$defs/loop"}}, "$ref": "#/$defs/loop"});
    assert_eq!(ts(schema), "type T = Loop;\ntype Loop = Loop;\n");
}

#[test]
fn bundled_openapi_schema_keeps_named_types() {
    let spec = json!({"components": {"schemas": {
        "label": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "issue": {"type": "object", "properties": {"labels": {"type": "array", "items": {"$ref": "#/components/schemas/label"}}, "parent": {"$ref": "#/components/schemas/issue"}}}
    }}});
    let schema = bundle_refs(&json!({"$ref": "#/components/schemas/issue"}), &spec);
    assert_eq!(
        schema_to_ts("Out", &schema, &schema),
        "type Out = Issue;\ntype Issue = { labels?: Label[]; parent?: Issue };\ntype Label = { name: string };\n"
    );
}

#[test]
fn a_builder_shares_named_types_between_declarations() {
    let a = json!({"$defs": {"user": {"type": "object", "properties": {"id": {"type": "integer"}}}}, "$ref": "#/$defs/user"});
    let b = a.clone();
    let mut builder = TypeScriptBuilder::new();
    builder.declare("A", &a, &a);
    builder.declare("B", &b, &b);
    assert_eq!(
        builder.finish(),
        "type A = User;\ntype B = User;\ntype User = { id?: number };\n"
    );
}

#[test]
fn bad_schemas_degrade_to_unknown() {
    let cases = [
        json!(null),
        json!(12),
        json!("object"),
        json!([{"type": "string"}]),
        json!({"type": {"nested": true}}),
        json!({"$ref": "#/definitions/missing"}),
        json!({"$ref": "https://example.com/schema.json"}),
        json!({"$ref": "#/0/1/2"}),
        json!({"anyOf": "not an array"}),
        json!({"not": {"type": "string"}}),
    ];
    for schema in cases {
        assert_eq!(ts(schema.clone()), "type T = unknown;\n", "{schema}");
    }
}

#[test]
fn a_very_wide_and_deep_schema_stays_bounded() {
    let mut schema = json!({"type": "string"});
    for i in 0..500 {
        schema = json!({"anyOf": [schema, {"type": "object", "properties": {format!("p{i}"): {"type": "number"}}}]});
    }
    let out = ts(schema);
    assert!(out.starts_with("type T = "));
    assert!(out.len() < 100_000, "{}", out.len());
}

#[test]
fn names_needing_escape_in_keys_and_comments() {
    let schema = json!({"type": "object", "properties": {
        "x-rate-limit": {"type": "integer", "description": "Ends here */ not really"},
        "名前": {"type": "string"},
        "": {"type": "boolean"},
        "line\u{2029}break": {"type": "null"}
    }});
    let out = ts(schema);
    assert!(out.contains("/** Ends here *\\/ not really */"), "{out}");
    assert!(out.contains("\"x-rate-limit\"?: number;"), "{out}");
    assert!(out.contains("\"名前\"?: string;"), "{out}");
    assert!(out.contains("\"\"?: boolean;"), "{out}");
    assert!(out.contains("\"line\\u2029break\"?: null;"), "{out}");
    assert!(!out.contains('\u{2029}'));
}
