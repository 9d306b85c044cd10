//! Every accepted code form, each run end to end with its expected result.

mod common;

use codemode_quickjs::QuickJsExecutor;
use common::{returned, run_with, TestHost};
use serde_json::{json, Value};

/// `(name, code, expected result)`.
fn cases() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        // Async arrow functions.
        ("arrow", "async () => 1", json!(1)),
        ("arrow with semicolon", "async () => 1;", json!(1)),
        ("arrow with block", "async () => { return 2; }", json!(2)),
        (
            "arrow with block and semicolon",
            "async () => { return 2; };",
            json!(2),
        ),
        (
            "parenthesised arrow",
            "(async () => { return 3; })",
            json!(3),
        ),
        ("sync arrow", "() => 4", json!(4)),
        (
            "arrow with leading comment",
            "// list them\nasync () => 5",
            json!(5),
        ),
        (
            "arrow with trailing comment",
            "async () => 6 // done",
            json!(6),
        ),
        (
            "arrow awaiting a call",
            "async () => { const r = await tasks.get({id: 7}); return r.args.id; }",
            json!(7),
        ),
        (
            "arrow after helpers",
            "const double = (x) => x * 2;\nasync () => double(4)",
            json!(8),
        ),
        // Function declarations.
        (
            "named async function",
            "async function main() { return 9; }",
            json!(9),
        ),
        (
            "named function",
            "function main() { return 10; }",
            json!(10),
        ),
        (
            "anonymous async function",
            "async function () { return 11; }",
            json!(11),
        ),
        (
            "anonymous function with semicolon",
            "async function() { return 12; };",
            json!(12),
        ),
        (
            "function then call",
            "async function main() { return 13; }\nmain()",
            json!(13),
        ),
        (
            "function expression",
            "(async function () { return 14; })",
            json!(14),
        ),
        ("iife", "(async () => { return 15; })()", json!(15)),
        // export default.
        (
            "export default arrow",
            "export default async () => 16;",
            json!(16),
        ),
        (
            "export default named function",
            "export default async function main() { return 17; }",
            json!(17),
        ),
        (
            "export default anonymous function",
            "export default async function () { return 18; }",
            json!(18),
        ),
        ("export default value", "export default 19;", json!(19)),
        (
            "export default with later helper",
            "export default async () => helper();\nconst helper = () => 20;",
            json!(20),
        ),
        (
            "export const then default",
            "export const x = 21;\nexport default () => x;",
            json!(21),
        ),
        // Bare statements.
        ("bare expression", "1 + 21", json!(22)),
        (
            "statements then expression",
            "const a = 11;\nconst b = 12;\na + b",
            json!(23),
        ),
        (
            "await at top level",
            "const r = await tasks.get({n: 24});\nr.args.n",
            json!(24),
        ),
        ("object literal expression", "({ a: 25 })", json!({"a": 25})),
        ("string directive", "'twenty-six'", json!("twenty-six")),
        ("no result", "const x = 1;", Value::Null),
        ("trailing empty statements", "27;;", json!(27)),
        // Top-level return.
        ("top-level return", "return 28;", json!(28)),
        (
            "return after statements",
            "const x = 29;\nreturn x;",
            json!(29),
        ),
        (
            "conditional return",
            "if (true) { return 30; }\nreturn 0;",
            json!(30),
        ),
        (
            "return before function",
            "return helper();\nfunction helper() { return 31; }",
            json!(31),
        ),
        // Fences.
        ("fence js", "```js\nasync () => 32\n```", json!(32)),
        (
            "fence javascript",
            "```javascript\nreturn 33;\n```",
            json!(33),
        ),
        ("fence without language", "```\n34\n```", json!(34)),
        ("fence jsx", "```jsx\nasync () => 35\n```", json!(35)),
        (
            "fence in prose",
            "Here is the code:\n\n```js\nreturn 36;\n```\n\nIt returns 36.",
            json!(36),
        ),
        ("fence unclosed", "```js\nasync () => 37", json!(37)),
        // TypeScript.
        (
            "ts fence arrow",
            "```ts\nasync (): Promise<number> => 38\n```",
            json!(38),
        ),
        (
            "ts fence typescript",
            "```typescript\nconst x: number = 39;\nx\n```",
            json!(39),
        ),
        (
            "tsx fence",
            "```tsx\nconst f = (n: number): number => n;\nreturn f(40);\n```",
            json!(40),
        ),
        (
            "ts without fence",
            "const n: number = 41;\nreturn n;",
            json!(41),
        ),
        (
            "ts interface",
            "interface T { id: number }\nconst t: T = { id: 42 };\nt.id",
            json!(42),
        ),
        (
            "ts type alias and as",
            "type N = number;\nconst x = (43 as N);\nx",
            json!(43),
        ),
        (
            "ts generic function",
            "function id<T>(x: T): T { return x; }\nreturn id(44);",
            json!(44),
        ),
        (
            "ts named async function",
            "async function main(): Promise<number> { return 45; }",
            json!(45),
        ),
        (
            "ts export default",
            "export default async (): Promise<number> => 46;",
            json!(46),
        ),
        (
            "ts enum",
            "enum Color { Red = 47 }\nreturn Color.Red;",
            json!(47),
        ),
        (
            "ts non-null and optional",
            "const m: { v?: number } = { v: 48 };\nreturn m.v!;",
            json!(48),
        ),
        (
            "ts in prose fence",
            "Sure:\n```ts\nconst r: any = await tasks.get({ k: 49 });\nreturn r.args.k;\n```",
            json!(49),
        ),
        // Values.
        (
            "undefined becomes null",
            "async () => undefined",
            Value::Null,
        ),
        (
            "integers stay integers",
            "async () => [1, 2.0, 2.5, -0]",
            json!([1, 2, 2.5, 0]),
        ),
        (
            "nested objects",
            "async () => ({ a: [1, { b: 'c' }], d: null, e: true })",
            json!({"a": [1, {"b": "c"}], "d": null, "e": true}),
        ),
        (
            "undefined properties dropped",
            "async () => ({ a: 1, b: undefined })",
            json!({"a": 1}),
        ),
        (
            "bigint envelope",
            "async () => 12345678901234567890n",
            json!({"$bigint": "12345678901234567890"}),
        ),
        (
            "bytes envelope",
            "async () => new Uint8Array([0, 1, 255])",
            json!({"$bytes": "AAH/"}),
        ),
        (
            "date as ISO string",
            "async () => new Date(0)",
            json!("1970-01-01T00:00:00.000Z"),
        ),
    ]
}

#[tokio::test]
async fn every_form_runs_with_its_expected_result() {
    let executor = QuickJsExecutor::default();
    let mut failures = Vec::new();
    let all = cases();
    assert!(all.len() >= 40);
    for (name, code, expected) in all {
        let result = run_with(&executor, code, TestHost::echo()).await;
        match &result.end {
            codemode::PassEnd::Returned(v) if *v == expected => {}
            other => failures.push(format!("{name}: expected {expected}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn integer_results_serialise_as_integers() {
    let result = common::run("async () => ({ n: 3 * 1.0, big: 2 ** 40 })").await;
    let text = serde_json::to_string(&returned(&result)).unwrap();
    assert_eq!(text, r#"{"n":3,"big":1099511627776}"#);
}
