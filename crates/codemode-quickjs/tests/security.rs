//! Nothing is reachable that is not given; nothing survives a pass; the wrapper cannot be escaped.

mod common;

use codemode::HostReply;
use codemode_quickjs::{QuickJsExecutor, RESERVED_GLOBALS};
use common::{failure, returned, run, run_with, TestHost};
use serde_json::json;

#[tokio::test]
async fn capabilities_that_are_not_given_do_not_exist() {
    let names = [
        "fetch",
        "require",
        "process",
        "module",
        "exports",
        "Deno",
        "Bun",
        "std",
        "os",
        "XMLHttpRequest",
        "WebSocket",
        "setTimeout",
        "setInterval",
        "importScripts",
        "__dirname",
    ];
    for name in names {
        let code = format!("async () => typeof {name}");
        assert_eq!(returned(&run(&code).await), json!("undefined"), "{name}");
    }
}

#[tokio::test]
async fn dynamic_import_fails() {
    let code = "async () => { try { await import('fs'); return 'loaded'; } catch (e) { return 'refused'; } }";
    assert_eq!(returned(&run(code).await), json!("refused"));
    let code = "async () => { try { await import('data:text/javascript,export default 1'); return 'loaded'; } catch (e) { return 'refused'; } }";
    assert_eq!(returned(&run(code).await), json!("refused"));
}

#[tokio::test]
async fn static_import_is_refused_with_advice() {
    let message = failure(
        &run("import { readFileSync } from 'fs';\nreturn readFileSync('/etc/passwd');").await,
    );
    assert!(message.contains("`import` is not available"), "{message}");
}

#[tokio::test]
async fn eval_and_the_function_constructor_reach_only_the_sandbox() {
    let code = r#"async () => [
        eval("typeof require"),
        Function("return typeof process")(),
        (0, eval)("typeof fetch"),
        [].constructor.constructor("return typeof globalThis.std")(),
    ]"#;
    assert_eq!(
        returned(&run(code).await),
        json!(["undefined", "undefined", "undefined", "undefined"])
    );
}

#[tokio::test]
async fn the_global_object_holds_only_built_ins_and_what_was_given() {
    let code = "async () => Object.getOwnPropertyNames(globalThis)";
    let names = returned(&run(code).await);
    let unexpected: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| *n != "tasks" && !RESERVED_GLOBALS.contains(n))
        .collect();
    assert!(unexpected.is_empty(), "unexpected globals: {unexpected:?}");
}

#[tokio::test]
async fn the_glue_helpers_are_not_reachable() {
    let code = "async () => [typeof host, typeof encode, typeof revive, typeof sink, typeof b64encode, typeof __codemode_entry]";
    assert_eq!(returned(&run(code).await), json!(vec!["undefined"; 6]));
}

#[tokio::test]
async fn wrapper_break_out_attempts_fail_to_parse() {
    let attempts = [
        "return 1; })(); globalThis.escaped = true; (async () => {",
        "async () => { return 1 }\n})();\nconsole.log('escaped');\n(async () => {",
        "}); console.log('escaped'); (() => {",
        "return 1 } ; console.log('escaped') ; {",
        "1 /*",
        "`",
        "return 1; }\n}\n",
        "```js\nreturn 1; })(); (function () {\n```",
    ];
    for code in attempts {
        let result = run(code).await;
        let message = failure(&result);
        assert!(
            message.contains("SyntaxError") || message.contains("not JavaScript"),
            "{code}: {message}"
        );
        assert!(result.logs.is_empty(), "{code}: {:?}", result.logs);
    }
}

#[tokio::test]
async fn nothing_survives_a_pass() {
    let executor = QuickJsExecutor::default();
    let first = "async () => { globalThis.leak = 1; Object.prototype.polluted = 'yes'; Array.prototype.push = () => 0; JSON.parse = () => 'hacked'; return 1; }";
    assert_eq!(
        returned(&run_with(&executor, first, TestHost::echo()).await),
        json!(1)
    );
    let second = "async () => { const a = []; a.push(1); return [typeof leak, ({}).polluted ?? null, a.length, JSON.parse('2')]; }";
    let result = run_with(&executor, second, TestHost::echo()).await;
    assert_eq!(returned(&result), json!(["undefined", null, 1, 2]));
}

#[tokio::test]
async fn host_values_are_plain_copies() {
    let host =
        TestHost::new(|_| HostReply::Value(json!({"__proto__": {"admin": true}, "items": [1]})));
    let code = r#"async () => {
        const a = await tasks.get({});
        a.items.push(2);
        Object.getPrototypeOf(a).injected = 1;
        const b = await tasks.get({});
        delete Object.prototype.injected;
        return [Object.getPrototypeOf(a) === Object.prototype, ({}).admin ?? null, b.items, a === b];
    }"#;
    assert_eq!(
        returned(&run_with(&QuickJsExecutor::default(), code, host).await),
        json!([true, null, [1], false])
    );
}

#[tokio::test]
async fn replacing_json_does_not_change_what_the_host_receives() {
    let host = TestHost::echo();
    let code = r#"async () => {
        JSON.stringify = () => '"forged"';
        Object.prototype.toJSON = undefined;
        return (await tasks.get({ a: 1 })).args;
    }"#;
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!({"a": 1}));
    assert_eq!(host.calls()[0].args, json!({"a": 1}));
}

#[tokio::test]
async fn namespace_objects_cannot_be_replaced() {
    let host = TestHost::echo();
    let code = r#"async () => {
        const attempts = [];
        try { tasks.get = () => 'fake'; } catch (e) { attempts.push(e.name); }
        try { globalThis.tasks = {}; } catch (e) { attempts.push(e.name); }
        try { console.log = () => {}; } catch (e) { attempts.push(e.name); }
        return [attempts, (await tasks.get({})).method];
    }"#;
    let result = run_with(&QuickJsExecutor::default(), code, host).await;
    assert_eq!(
        returned(&result),
        json!([["TypeError", "TypeError", "TypeError"], "get"])
    );
}

#[tokio::test]
async fn a_prototype_polluting_argument_reaches_the_host_as_plain_data() {
    let host = TestHost::echo();
    let code = r#"async () => {
        const args = JSON.parse('{"__proto__": {"polluted": true}, "title": "t"}');
        await tasks.create_task(args);
        return ({}).polluted ?? null;
    }"#;
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!(null));
    assert_eq!(
        host.calls()[0].args,
        json!({"__proto__": {"polluted": true}, "title": "t"})
    );
}
