//! Property tests: every JSON value crosses the sandbox in and out unchanged (numbers bit for
//! bit), and normalisation never panics. `PROPTEST_CASES` sets the number of cases.

mod common;

use std::sync::Arc;

use base64::Engine;
use codemode::{ExecuteRequest, Executor, HostReply};
use codemode_quickjs::{normalize, QuickJsExecutor};
use common::{namespaces, TestHost};
use proptest::prelude::*;
use serde_json::{json, Map, Number, Value};

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Doubles of every kind: ordinary, subnormal, extreme, integral, -0.
fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |d| d.is_finite()),
        (-1e6f64..1e6f64),
        any::<i64>().prop_map(|i| (i >> 11) as f64),
        Just(-0.0),
        Just(5e-324),
        Just(1.7976931348623157e308),
        Just(0.9900828963536101),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z$_]{0,8}",
        Just("$bigint".to_string()),
        Just("$bytes".to_string()),
        Just("__proto__".to_string()),
        Just("a\u{0}b\u{1F600}\u{2028}".to_string()),
    ]
}

fn envelope() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i128>().prop_map(|n| json!({ "$bigint": n.to_string() })),
        proptest::collection::vec(any::<u8>(), 0..24).prop_map(|bytes| {
            json!({ "$bytes": base64::engine::general_purpose::STANDARD.encode(bytes) })
        }),
        text().prop_map(|t| json!({ "$bigint": t })),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        double().prop_map(|d| Number::from_f64(d).map_or(Value::Null, Value::Number)),
        (-(1i64 << 53)..(1i64 << 53)).prop_map(|i| json!(i)),
        text().prop_map(Value::String),
        envelope(),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((text(), inner), 0..8)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Whether `got` is `sent` after a trip through JavaScript: numbers equal as doubles (bit for
/// bit, `-0` leaving as `0`), objects equal whatever their key order.
fn same(sent: &Value, got: &Value) -> bool {
    match (sent, got) {
        (Value::Number(a), Value::Number(b)) => {
            let a = a.as_f64().unwrap_or(f64::NAN);
            let a = if a == 0.0 { 0.0 } else { a };
            b.as_f64().is_some_and(|b| a.to_bits() == b.to_bits())
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => sent == got,
    }
}

#[test]
fn every_json_value_crosses_the_sandbox_unchanged() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let executor = Arc::new(QuickJsExecutor::default());
    let config = ProptestConfig {
        cases: cases(2_000),
        ..ProptestConfig::default()
    };
    proptest!(config, |(value in json_value())| {
        let reply = value.clone();
        let host = TestHost::new(move |call| {
            if call.method == "get" { HostReply::Value(reply.clone()) } else { HostReply::Value(Value::Null) }
        });
        let code = "async () => { const v = await tasks.get(); await tasks.create_task({ v }); return v; }";
        let result = runtime.block_on(executor.execute(
            ExecuteRequest { code: code.to_string(), namespaces: namespaces(), clock: Default::default() },
            host.clone(),
        ));
        let returned = match result.end {
            codemode::PassEnd::Returned(v) => v,
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        prop_assert!(same(&value, &returned), "sent {value} got {returned}");
        let calls = host.calls();
        let sent_back = &calls[1].args["v"];
        prop_assert!(same(&value, sent_back), "sent {value} got back as args {sent_back}");
    });
}

fn code_like() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("async () => {".to_string()),
        Just("}".to_string()),
        Just("```ts\n".to_string()),
        Just("```".to_string()),
        Just("return ".to_string()),
        Just("await tasks.get({})".to_string()),
        Just("function f(a: number): string {".to_string()),
        Just("export default ".to_string()),
        Just("import x from 'y';".to_string()),
        Just("/* c */".to_string()),
        Just("// c\n".to_string()),
        Just("'str".to_string()),
        Just("`${".to_string()),
        Just(";\n".to_string()),
        Just("})();".to_string()),
        Just("\u{0}".to_string()),
        any::<String>(),
    ];
    proptest::collection::vec(pieces, 0..10).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(2_000), ..ProptestConfig::default() })]

    /// Normalisation never panics, and what it produces is accepted again.
    #[test]
    fn normalisation_never_panics_and_accepts_its_own_output(code in code_like()) {
        if let Ok(normalized) = normalize(&code, 1_000_000) {
            let again = normalize(&normalized.source, 1_000_000);
            prop_assert!(again.is_ok(), "{:?} from {}", again.err(), normalized.source);
        }
    }
}

/// Found by the property above: the output puts empty template literals (``` `````` ```) at
/// the start of a line, which must not read as a markdown fence the second time.
#[test]
fn a_line_of_empty_template_literals_normalises_again() {
    let first = normalize("function f(a: number): string {``````}", 1_000_000).unwrap();
    let again = normalize(&first.source, 1_000_000);
    assert!(again.is_ok(), "{:?} from {}", again.err(), first.source);
}

/// Found by the same property: a multi-line template literal the TypeScript stripper indents
/// with tabs put ```` ```ts ```` at the start of a line, which read as an unclosed fence the
/// second time.
#[test]
fn a_tab_indented_line_of_backticks_normalises_again() {
    let first = normalize("function f(a: number): string {```ts\n```}", 1_000_000).unwrap();
    let again = normalize(&first.source, 1_000_000);
    assert!(again.is_ok(), "{:?} from {}", again.err(), first.source);
}
