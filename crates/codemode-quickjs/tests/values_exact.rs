//! Values cross the sandbox boundary bit for bit, or are refused with a clear error.

mod common;

use codemode::HostReply;
use codemode_quickjs::QuickJsExecutor;
use common::{failure, returned, run, run_with, TestHost};
use serde_json::{json, Value};

/// Doubles whose shortest decimal form takes 15 to 17 digits, and the extremes.
const DOUBLES: [f64; 10] = [
    0.9900828963536101,
    5e-324,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    2.2250738585072014e-308,
    0.30000000000000004,
    123456789.12345679,
    -0.1,
    9007199254740993.0,
    1e21,
];

fn bits(value: &Value) -> Vec<u64> {
    let items = value.as_array().expect("an array");
    items
        .iter()
        .map(|v| v.as_f64().expect("a number").to_bits())
        .collect()
}

#[tokio::test]
async fn doubles_written_in_the_sandbox_come_back_bit_for_bit() {
    let literals: Vec<String> = DOUBLES.iter().map(|d| format!("{d:e}")).collect();
    let code = format!("async () => [{}]", literals.join(", "));
    let value = returned(&run(&code).await);
    let expected: Vec<u64> = DOUBLES.iter().map(|d| d.to_bits()).collect();
    assert_eq!(bits(&value), expected, "{value}");
}

#[tokio::test]
async fn doubles_from_the_host_go_in_and_out_bit_for_bit() {
    let host = TestHost::new(|_| HostReply::Value(json!(DOUBLES)));
    let code = "async () => { const v = await tasks.get(); return [v, v.map(String)]; }";
    let value = returned(&run_with(&QuickJsExecutor::default(), code, host).await);
    let expected: Vec<u64> = DOUBLES.iter().map(|d| d.to_bits()).collect();
    assert_eq!(bits(&value[0]), expected, "{value}");
    assert_eq!(value[1][0], json!("0.9900828963536101"));
}

#[tokio::test]
async fn negative_zero_enters_as_negative_zero_and_leaves_as_zero() {
    let host = TestHost::new(|_| HostReply::Value(json!(-0.0)));
    let code = "async () => { const v = await tasks.get(); return [Object.is(v, -0), -0]; }";
    let value = returned(&run_with(&QuickJsExecutor::default(), code, host).await);
    assert_eq!(value[0], json!(true));
    assert_eq!(value[1].as_f64().map(f64::to_bits), Some(0.0f64.to_bits()));
}

#[tokio::test]
async fn strings_with_nul_astral_and_escapes_survive() {
    let text = "a\u{0}b \u{1F600} \u{10FFFF} \"q\" \\ \u{7f} \u{2028}";
    let host = TestHost::new(move |c| HostReply::Value(c.args.clone()));
    let code = "async (input) => { const v = await tasks.get({ s: \"a\\u0000b \\u{1F600} \\u{10FFFF} \\\"q\\\" \\\\ \\u007f \\u2028\" }); return [v.s, v.s.length]; }";
    let value = returned(&run_with(&QuickJsExecutor::default(), code, host.clone()).await);
    assert_eq!(value, json!([text, 19]));
    assert_eq!(host.calls()[0].args, json!({ "s": text }));
}

#[tokio::test]
async fn a_nul_character_in_the_code_is_part_of_the_string() {
    let value = returned(
        &run("async () => { const s = \"a\u{0}b\"; return [s.length, s.charCodeAt(1)]; }").await,
    );
    assert_eq!(value, json!([3, 0]));
}

#[tokio::test]
async fn a_lone_surrogate_is_refused_with_advice() {
    let message = failure(&run("async () => ({ text: '\\u{1F600}x'.slice(1) })").await);
    assert!(message.contains("lone UTF-16 surrogate"), "{message}");
    assert!(message.contains("result.text: "), "{message}");
    assert!(message.contains("toWellFormed"), "{message}");
    let message = failure(&run("async () => ({ ['\\ud800']: 1 })").await);
    assert!(message.contains("lone UTF-16 surrogate"), "{message}");
    let value = returned(&run("async () => '\\u{1F600}x'.slice(1).toWellFormed()").await);
    assert_eq!(value, json!("\u{FFFD}x"));
}

fn nested(depth: usize) -> Value {
    let mut value = json!("leaf");
    for i in 0..depth {
        value = if i % 2 == 0 {
            json!([value])
        } else {
            json!({ "k": value })
        };
    }
    value
}

#[tokio::test]
async fn nesting_up_to_the_limit_round_trips_and_deeper_is_refused() {
    let limit = codemode_quickjs::values::MAX_DEPTH;
    let deep = nested(limit);
    let host = TestHost::new(move |_| HostReply::Value(deep.clone()));
    let value = returned(
        &run_with(
            &QuickJsExecutor::default(),
            "async () => await tasks.get()",
            host,
        )
        .await,
    );
    assert_eq!(value, nested(limit));
    let code = format!(
        "async () => {{ let v = 1; for (let i = 0; i < {}; i++) v = [v]; return v; }}",
        limit + 1
    );
    let message = failure(&run(&code).await);
    assert!(message.contains("nested more than 127 levels"), "{message}");
}

#[tokio::test]
async fn envelopes_round_trip_and_only_canonical_ones_revive() {
    let sent = json!([
        {"$bigint": "-123456789012345678901234567890"},
        {"$bigint": "0"},
        {"$bytes": "AAH/"},
        {"$bytes": ""},
        {"$bigint": "0x10"},
        {"$bigint": "-0"},
        {"$bigint": " 1"},
        {"$bytes": "not base64"},
        {"$bigint": "1", "other": 2},
    ]);
    let reply = sent.clone();
    let host = TestHost::new(move |_| HostReply::Value(reply.clone()));
    let code = "async () => { const v = await tasks.get(); return [v, v.map(x => typeof x === 'bigint' ? 'bigint' : x instanceof Uint8Array ? 'bytes' : 'object')]; }";
    let value = returned(&run_with(&QuickJsExecutor::default(), code, host).await);
    assert_eq!(value[0], sent);
    assert_eq!(
        value[1],
        json!([
            "bigint", "bigint", "bytes", "bytes", "object", "object", "object", "object", "object"
        ])
    );
}

#[tokio::test]
async fn a_bigint_of_a_million_digits_is_refused_at_once_both_ways() {
    let started = std::time::Instant::now();
    let digits = "9".repeat(1_000_000);
    let host = TestHost::new(move |_| HostReply::Value(json!({ "$bigint": digits.clone() })));
    let code = "async () => { const v = await tasks.get(); return typeof v; }";
    let message = failure(&run_with(&QuickJsExecutor::default(), code, host).await);
    assert!(
        message.contains("of 1000000 digits; at most 10000 digits become a BigInt"),
        "{message}"
    );
    // The engine holds at most about 315,000 digits; 2n ** 1000000n is about 301,000.
    let message = failure(&run("async () => { await tasks.get({ v: [2n ** 1000000n] }) }").await);
    assert!(
        message.starts_with(
            "TypeError: args.v[0]: a BigInt of more than 10000 digits cannot be sent to a connector (tasks.get); pass it as a hexadecimal string"
        ),
        "{message}"
    );
    let value = returned(&run("async () => (2n ** 1000000n).toString(16).length").await);
    assert_eq!(value, json!(250_001));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn a_value_nested_ten_thousand_deep_is_refused_with_its_path() {
    let deep = "let v = 1; for (let i = 0; i < 10000; i++) v = [v];";
    for (code, start) in [
        (
            format!("async () => {{ {deep} await tasks.get({{ v }}); }}"),
            "TypeError: args.v[0][0][0][0][0]…(115 more)…[0][0][0][0][0][0]: a value nested more than 127 levels deep",
        ),
        (
            format!("async () => {{ {deep} return v; }}"),
            "The result cannot be returned: TypeError: result[0][0][0][0][0][0]…(115 more)…[0][0][0][0][0][0]: a value nested more than 127 levels deep",
        ),
    ] {
        let message = failure(&run(&code).await);
        assert!(message.starts_with(start), "{message}");
        assert!(message.contains("flatten it"), "{message}");
    }
}

#[tokio::test]
async fn the_sdk_names_itself_where_a_value_cannot_be_passed() {
    let message = failure(&run("async () => codemode.run('report', { when: new Map() })").await);
    assert!(
        message.starts_with("TypeError: arguments.input.when: a Map cannot be passed to codemode.run; convert it with Object.fromEntries(map)"),
        "{message}"
    );
}

#[tokio::test]
async fn a_getter_that_calls_a_connector_while_arguments_are_encoded_leaves_the_outer_encoding_whole(
) {
    // The inner call's arguments are encoded while the outer ones are half written: the
    // outer refusal still names its own path and target, and the inner call went out as sent.
    let host = TestHost::new(|call| HostReply::Value(call.args.clone()));
    let code = r#"async () => {
        let inner = null;
        const args = { a: { get b() { inner = tasks.get({ deep: [{ x: 1 }] }); return 2; } }, z: NaN };
        try { await tasks.get(args); } catch (e) { return [String(e.message).slice(0, 40), await inner]; }
    }"#;
    let value = returned(&run_with(&QuickJsExecutor::default(), code, host).await);
    assert_eq!(
        value,
        json!(["args.z: NaN cannot be sent to a connecto", { "deep": [{ "x": 1 }] }])
    );
    // And a cycle found after a nested encoding is still reported from the outer value.
    let host = TestHost::new(|call| HostReply::Value(call.args.clone()));
    let code = r#"async () => {
        const args = { a: { get b() { tasks.get({ other: [1, [2, [3]]] }); return 2; } } };
        args.a.self = args;
        try { await tasks.get(args); } catch (e) { return String(e.message); }
    }"#;
    let message = returned(&run_with(&QuickJsExecutor::default(), code, host).await);
    assert!(
        message
            .as_str()
            .is_some_and(|m| m
                .starts_with("args.a.self: a value that contains itself (a cycle: it is args)")),
        "{message}"
    );
}
