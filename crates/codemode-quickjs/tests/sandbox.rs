//! Host calls, the SDK, console capture, values and error messages.

mod common;

use codemode::{Executor, HostReply, PassEnd};
use codemode_quickjs::QuickJsExecutor;
use common::{failure, returned, run, run_with, TestHost};
use serde_json::json;

#[tokio::test]
async fn connector_calls_become_host_calls() {
    let host = TestHost::echo();
    let code = "async () => { const a = await tasks.list_tasks(); const b = await tasks.create_task({title: 'x', n: 2}); return [a.args, b.method]; }";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!([{}, "create_task"]));
    let calls = host.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].namespace, "tasks");
    assert_eq!(calls[0].method, "list_tasks");
    assert_eq!(calls[0].args, json!({}));
    assert_eq!(calls[1].args, json!({"title": "x", "n": 2}));
}

#[tokio::test]
async fn calls_run_concurrently_with_promise_all() {
    let code =
        "async () => (await Promise.all([1, 2, 3].map(n => tasks.get({n})))).map(r => r.args.n)";
    assert_eq!(returned(&run(code).await), json!([1, 2, 3]));
}

#[tokio::test]
async fn a_thrown_reply_is_a_catchable_error() {
    let host = TestHost::new(|_| HostReply::Throw("title: required".into()));
    let code = "async () => { try { await tasks.create_task({}); } catch (e) { return [e instanceof Error, e.message]; } }";
    let result = run_with(&QuickJsExecutor::default(), code, host).await;
    assert_eq!(returned(&result), json!([true, "title: required"]));
}

#[tokio::test]
async fn an_uncaught_thrown_reply_fails_the_pass_with_its_message() {
    let host = TestHost::new(|_| HostReply::Throw("no such task".into()));
    let result = run_with(
        &QuickJsExecutor::default(),
        "await tasks.get({id: 1})",
        host,
    )
    .await;
    assert!(failure(&result).contains("no such task"));
}

#[tokio::test]
async fn the_pause_cannot_be_caught_or_observed() {
    let host = TestHost::new(|c| {
        if c.method == "create_task" {
            HostReply::Abort
        } else {
            HostReply::Value(json!(null))
        }
    });
    let code = r#"async () => {
        try {
            await tasks.create_task({ title: "needs approval" });
        } catch (e) {
            console.log("caught", e);
            await tasks.get({ after: "catch" });
        } finally {
            console.log("finally");
            await tasks.get({ after: "finally" });
        }
        await tasks.get({ after: "end" });
        return "finished";
    }"#;
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(result.end, PassEnd::Aborted);
    assert!(result.logs.is_empty(), "{:?}", result.logs);
    assert_eq!(host.calls().len(), 1);
}

#[tokio::test]
async fn the_pause_stops_parallel_calls_too() {
    let host = TestHost::new(|c| {
        if c.args["n"] == json!(2) {
            HostReply::Abort
        } else {
            HostReply::Value(json!(1))
        }
    });
    let code = "async () => { await Promise.allSettled([tasks.get({n: 1}), tasks.get({n: 2})]); await tasks.get({n: 3}); }";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(result.end, PassEnd::Aborted);
    assert!(host.calls().iter().all(|c| c.args["n"] != json!(3)));
}

#[tokio::test]
async fn search_and_describe_are_host_calls() {
    let host = TestHost::echo();
    let code = "async () => [await codemode.search('tasks'), await codemode.describe('tasks.get')]";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    let v = returned(&result);
    assert_eq!(v[0]["namespace"], json!("codemode"));
    assert_eq!(v[0]["method"], json!("search"));
    assert_eq!(v[0]["args"], json!({"query": "tasks"}));
    assert_eq!(v[1]["args"], json!({"target": "tasks.get"}));
}

#[tokio::test]
async fn a_replayed_step_returns_its_value_without_running() {
    let host = TestHost::new(|c| match c.method.as_str() {
        "step" => HostReply::Value(json!({"replay": true, "value": {"at": 42}})),
        _ => HostReply::Value(json!(null)),
    });
    let code = "async () => await codemode.step('now', async () => { await tasks.get({}); return {at: 1}; })";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!({"at": 42}));
    let calls = host.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].args, json!({"name": "now"}));
}

#[tokio::test]
async fn a_new_step_runs_and_reports_its_result() {
    let host = TestHost::new(|c| match c.method.as_str() {
        "step" => HostReply::Value(json!({"replay": false, "seq": 3})),
        _ => HostReply::Value(json!(null)),
    });
    let code = "async () => await codemode.step('pick', () => ({ n: 7, big: 5n }))";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!({"n": 7, "big": {"$bigint": "5"}}));
    let calls = host.calls();
    assert_eq!(calls[1].method, "step_result");
    assert_eq!(
        calls[1].args,
        json!({"seq": 3, "value": {"n": 7, "big": {"$bigint": "5"}}, "clock": [0, 0]})
    );
}

#[tokio::test]
async fn a_failing_step_reports_its_error_and_rethrows() {
    let host = TestHost::new(|c| match c.method.as_str() {
        "step" => HostReply::Value(json!({"replay": false, "seq": 0})),
        _ => HostReply::Value(json!(null)),
    });
    let code = "async () => { try { await codemode.step('x', () => { throw new Error('boom'); }); } catch (e) { return e.message; } }";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!("boom"));
    let calls = host.calls();
    assert_eq!(calls[1].method, "step_error");
    assert_eq!(
        calls[1].args,
        json!({"seq": 0, "error": "Error: boom", "clock": [0, 0]})
    );
}

#[tokio::test]
async fn run_executes_a_snippet_in_the_same_pass() {
    let host = TestHost::new(|c| {
        match (c.namespace.as_str(), c.method.as_str()) {
        ("codemode", "run") => HostReply::RunCode {
            code: "```ts\nconst r: any = await tasks.get({ id: input.id });\nreturn r.args.id * 2;\n```".into(),
            input: c.args["input"].clone(),
        },
        _ => HostReply::Value(json!({"args": c.args})),
    }
    });
    let code = "async () => await codemode.run('double', { id: 21 })";
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!(42));
    let calls = host.calls();
    assert_eq!(
        calls[0].args,
        json!({"name": "double", "input": {"id": 21}, "chain": []})
    );
    assert_eq!(calls[1].method, "get");
}

#[tokio::test]
async fn a_snippet_that_does_not_parse_rejects_the_run_promise() {
    let host = TestHost::new(|_| HostReply::RunCode {
        code: "async () => {".into(),
        input: json!(null),
    });
    let code = "async () => { try { await codemode.run('bad'); } catch (e) { return e.message; } }";
    let message = returned(&run_with(&QuickJsExecutor::default(), code, host).await);
    assert!(
        message.as_str().unwrap().contains("SyntaxError"),
        "{message}"
    );
}

#[tokio::test]
async fn console_output_is_captured_as_lines() {
    let code = r#"async () => {
        console.log("plain", 1, { a: [1, 2] }, null, undefined);
        console.info("info");
        console.warn("careful");
        console.error(new TypeError("bad"));
        console.debug(5n, [1n]);
        return 0;
    }"#;
    let result = run(code).await;
    assert_eq!(
        result.logs,
        vec![
            r#"plain 1 {"a":[1,2]} null undefined"#,
            "info",
            "[warn] careful",
            "[error] TypeError: bad",
            r#"5n ["1n"]"#,
        ]
    );
}

#[tokio::test]
async fn logs_survive_a_failure() {
    let result = run("console.log('before'); throw new Error('after');").await;
    assert_eq!(result.logs, vec!["before"]);
    assert!(failure(&result).starts_with("Error: after"));
}

#[tokio::test]
async fn bigint_and_bytes_round_trip_through_the_host() {
    let host = TestHost::new(|c| HostReply::Value(c.args.clone()));
    let code = r#"async () => {
        const r = await tasks.get({ big: 9007199254740993n, bytes: new Uint8Array([104, 105]) });
        return [typeof r.big, r.big === 9007199254740993n, r.bytes instanceof Uint8Array, Array.from(r.bytes)];
    }"#;
    let result = run_with(&QuickJsExecutor::default(), code, host.clone()).await;
    assert_eq!(returned(&result), json!(["bigint", true, true, [104, 105]]));
    assert_eq!(
        host.calls()[0].args,
        json!({"big": {"$bigint": "9007199254740993"}, "bytes": {"$bytes": "aGk="}})
    );
}

#[tokio::test]
async fn values_that_are_not_json_give_clear_errors() {
    let cases = [
        ("async () => () => 1", "function"),
        (
            "async () => ({ f() {} })",
            "result.f: a function cannot be returned",
        ),
        ("async () => Symbol('s')", "symbol"),
        (
            "async () => { const a = {}; a.self = a; return a; }",
            "result.self: a value that contains itself (a cycle: it is result)",
        ),
        (
            "async () => { await tasks.get({ cb: () => 1 }); }",
            "args.cb: a function cannot be sent to a connector (tasks.get)",
        ),
    ];
    for (code, expected) in cases {
        let message = failure(&run(code).await);
        assert!(message.contains(expected), "{code}: {message}");
    }
}

#[tokio::test]
async fn syntax_errors_point_into_the_model_code() {
    let cases = [
        ("async () => {\n  const x = ;\n}", 2, 13),
        ("Here:\n\n```js\nconst a = 1;\nconst = 2;\n```", 5, 7),
        ("```ts\nconst a: number = 1;\nlet b: = 2;\n```", 3, 8),
    ];
    for (code, line, column) in cases {
        let message = failure(&run(code).await);
        let expected = format!("line {line}, column {column}");
        assert!(message.contains("SyntaxError"), "{code}: {message}");
        assert!(
            message.contains(&expected),
            "{code}: expected {expected} in {message}"
        );
    }
}

#[tokio::test]
async fn runtime_errors_point_into_the_model_code() {
    let message = failure(&run("const a = 1;\nconst b = null;\nreturn b.x;").await);
    assert!(message.starts_with("TypeError"), "{message}");
    assert!(message.contains("line 3"), "{message}");
    let fenced = failure(&run("Try this:\n```js\nconst o = undefined;\no.field\n```").await);
    assert!(fenced.contains("line 4"), "{fenced}");
    let ts = failure(&run("```ts\nconst o: any = null;\n\nconst v: number = o.x;\n```").await);
    assert!(ts.contains("line 4"), "{ts}");
}

#[tokio::test]
async fn reference_errors_name_the_available_globals() {
    let message = failure(&run("async () => await github.list_issues({})").await);
    assert!(message.contains("github is not defined"), "{message}");
    assert!(
        message.contains("the only globals available in the sandbox are: tasks, codemode, console"),
        "{message}"
    );
}

#[tokio::test]
async fn bad_input_gets_a_clear_error() {
    let long = format!("return '{}';", "x".repeat(3_000_000));
    let cases: Vec<(String, &str)> = vec![
        ("".into(), "The code is empty"),
        ("   \n\t".into(), "The code is empty"),
        (
            "// just a comment\n/* and another */".into(),
            "only comments",
        ),
        ("```js\n```".into(), "The code is empty"),
        (
            "Please list all my open tasks".into(),
            "not JavaScript or TypeScript",
        ),
        ("```python\nprint('hi')\n```".into(), "marked `python`"),
        ("SELECT * FROM tasks;".into(), "SyntaxError"),
        (long, "more than the limit"),
        (
            "import fs from 'fs';\nfs.readFileSync('/etc/passwd')".into(),
            "`import` is not available",
        ),
    ];
    for (code, expected) in cases {
        let message = failure(&run(&code).await);
        assert!(
            message.contains(expected),
            "{}: {message}",
            &code[..code.len().min(40)]
        );
        assert!(message.contains("async () =>"), "no example in: {message}");
    }
}

#[tokio::test]
async fn namespaces_that_cannot_be_globals_are_refused() {
    let executor = QuickJsExecutor::default();
    for name in [
        "Promise", "console", "JSON", "codemode", "1abc", "my-api", "", "class", "input",
    ] {
        let request = codemode::ExecuteRequest {
            code: "async () => 1".into(),
            namespaces: vec![codemode::Namespace {
                name: name.into(),
                methods: vec!["m".into()],
                ..Default::default()
            }],
            clock: Default::default(),
        };
        let result = executor.execute(request, TestHost::echo()).await;
        let message = failure(&result);
        assert!(
            message.contains("cannot be a sandbox global"),
            "{name}: {message}"
        );
    }
    for name in [
        "Promise",
        "console",
        "JSON",
        "codemode",
        "Math",
        "globalThis",
    ] {
        assert!(executor.reserved_globals().contains(&name), "{name}");
    }
}

#[tokio::test]
async fn a_namespace_is_a_frozen_object_of_enumerable_read_only_methods() {
    let code = r#"async () => {
        const d = Object.getOwnPropertyDescriptor(tasks, 'get');
        const g = Object.getOwnPropertyDescriptor(globalThis, 'tasks');
        let assigned = 'kept';
        try { tasks.get = null; assigned = 'replaced'; } catch (e) { assigned = e.constructor.name; }
        return {
            keys: Object.keys(tasks),
            method: [typeof d.value, d.writable, d.enumerable, d.configurable],
            global: [g.writable, g.enumerable, g.configurable],
            frozen: Object.isFrozen(tasks),
            // Its prototype answers names that are not methods; above it, Object.prototype.
            proto: Object.getPrototypeOf(Object.getPrototypeOf(tasks)) === Object.prototype && tasks instanceof Object,
            assigned,
            still: typeof tasks.get,
        };
    }"#;
    // The first pass installs the namespaces itself; later ones find them installed ahead.
    let executor = QuickJsExecutor::default();
    for _ in 0..3 {
        let value = returned(&run_with(&executor, code, TestHost::echo()).await);
        assert_eq!(
            value,
            json!({
                "keys": ["list_tasks", "create_task", "get"],
                "method": ["function", false, true, false],
                "global": [false, false, false],
                "frozen": true,
                "proto": true,
                "assigned": "TypeError",
                "still": "function",
            })
        );
    }
}
