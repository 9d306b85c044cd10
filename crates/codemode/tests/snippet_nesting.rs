//! Snippets running snippets: a snippet that runs itself is refused at its first repeat, and
//! nesting past `max_snippet_depth` is refused, both with an error the code can catch.

use codemode::{Outcome, Runtime, RuntimeError, RustConnector, RustTool, SaveSnippet};
use serde_json::{json, Value};
use std::sync::Arc;

fn runtime(dir: &std::path::Path, depth: usize) -> Result<Runtime, RuntimeError> {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let probe = RustConnector::new("probe")
        .tool(RustTool::new("read", |args, _ctx| async move { Ok(args) }).read_only());
    Runtime::builder(store, executor)
        .connector(probe)
        .max_snippet_depth(depth)
        .build()
}

async fn completed(runtime: &Runtime, code: &str) -> Value {
    match runtime.call(code).await.unwrap() {
        Outcome::Completed { result, .. } => result,
        other => panic!("{code}: {other:?}"),
    }
}

/// Saves `code` (run once with no input, which must complete) as snippet `name`.
async fn save(runtime: &Runtime, name: &str, code: &str) {
    let outcome = runtime.call(code).await.unwrap();
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    let options = SaveSnippet {
        execution_id: outcome.execution_id().to_string(),
        description: None,
        input_schema: None,
        force: false,
        replace: false,
    };
    runtime.save_snippet(name, options).await.unwrap();
}

#[test]
fn a_depth_of_zero_is_a_build_error_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let Err(RuntimeError::InvalidConfig(message)) = runtime(dir.path(), 0) else {
        panic!("max_snippet_depth(0) was accepted");
    };
    assert!(message.contains("max_snippet_depth"), "{message}");
    assert!(message.contains("at least 1"), "{message}");
}

#[tokio::test(flavor = "current_thread")]
async fn nesting_past_the_limit_is_refused_and_within_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), 2).unwrap();
    save(
        &runtime,
        "leaf",
        "async (input) => { await probe.read({ at: 'leaf' }); return 'leaf' }",
    )
    .await;
    save(
        &runtime,
        "mid",
        "async (input) => input ? await codemode.run('leaf', {}) : 'mid'",
    )
    .await;
    save(
        &runtime,
        "top",
        "async (input) => input ? await codemode.run('mid', {}) : 'top'",
    )
    .await;

    // top -> mid is two deep: within the limit, and a sibling run of the same snippet
    // (not nested) is no repeat.
    let two =
        "async () => [await codemode.run('mid', {go: 1}), await codemode.run('mid', {go: 1})]";
    assert_eq!(completed(&runtime, two).await, json!(["leaf", "leaf"]));

    let three = r#"async () => {
        try { return await codemode.run('top', { go: 1 }) } catch (e) { return e.message }
    }"#;
    let message = completed(&runtime, three).await;
    let message = message.as_str().unwrap();
    assert!(
        message.contains("nest 3 deep (top -> mid -> leaf)"),
        "{message}"
    );
    assert!(message.contains("limit of 2"), "{message}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_self_call_stops_at_once_not_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), 8).unwrap();
    save(
        &runtime,
        "loop",
        "async (input) => input ? await codemode.run('loop', input) : 0",
    )
    .await;
    let started = std::time::Instant::now();
    let outcome = runtime
        .call("async () => codemode.run('loop', { go: 1 })")
        .await
        .unwrap();
    let Outcome::Error { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        error.contains("snippet loop -> loop runs itself"),
        "{error}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test(flavor = "current_thread")]
async fn a_self_call_through_an_alias_or_a_destructured_run_is_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), 8).unwrap();
    save(
        &runtime,
        "alias",
        "async (input) => { const r = codemode.run; return input ? await r('alias', input) : 0 }",
    )
    .await;
    save(
        &runtime,
        "parts",
        "const { run } = codemode;\nasync (input) => input ? await run('parts', input) : 0",
    )
    .await;
    for name in ["alias", "parts"] {
        let started = std::time::Instant::now();
        let code = format!("async () => codemode.run('{name}', {{ go: 1 }})");
        let outcome = runtime.call(&code).await.unwrap();
        let Outcome::Error { error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
        assert!(
            error.contains(&format!("snippet {name} -> {name} runs itself")),
            "{error}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_fenced_snippet_that_runs_itself_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), 8).unwrap();
    save(
        &runtime,
        "fenced",
        "Runs itself:\n```js\nasync (input) => input ? await codemode.run('fenced', input) : 0\n```",
    )
    .await;
    let outcome = runtime
        .call("async () => codemode.run('fenced', { go: 1 })")
        .await
        .unwrap();
    let Outcome::Error { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        error.contains("snippet fenced -> fenced runs itself"),
        "{error}"
    );
}

/// Every path to `codemode.run` from inside a snippet carries the chain: the executor works
/// it out from where the call is made, not from the reference the code holds.
#[tokio::test(flavor = "current_thread")]
async fn a_self_call_through_any_path_to_run_is_refused_at_the_first_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), 8).unwrap();
    let paths = [
        ("global", "globalThis.codemode.run"),
        ("evaled", "(0, eval)('codemode').run"),
        ("made", "Function('return codemode')().run"),
        (
            "proto",
            "Object.getPrototypeOf(codemode).run ?? codemode.run",
        ),
        (
            "own",
            "Object.getOwnPropertyDescriptor(globalThis, 'codemode').value.run",
        ),
        ("callback", "((f) => f)(codemode.run)"),
        ("later", "await Promise.resolve(codemode.run)"),
    ];
    for (name, path) in paths {
        let code = format!(
            "async (input) => {{ if (!input) return 0; const run = {path}; await probe.read({{}}); return await run('{name}', input) }}"
        );
        save(&runtime, name, &code).await;
        let outcome = runtime
            .call(&format!("async () => codemode.run('{name}', {{ go: 1 }})"))
            .await
            .unwrap();
        let Outcome::Error { error, .. } = &outcome else {
            panic!("{name}: {outcome:?}");
        };
        assert!(
            error.contains(&format!("snippet {name} -> {name} runs itself")),
            "{name}: {error}"
        );
    }
}

/// A snippet's eval'd code and a function it makes with `Function` run the snippet again
/// from inside: refused too (the caller is found below the eval's frame).
#[tokio::test(flavor = "current_thread")]
async fn a_self_call_from_eval_code_inside_a_snippet_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path(), 8).unwrap();
    save(
        &runtime,
        "inner",
        "async (input) => input ? await eval(\"globalThis.codemode.run('inner', input)\") : 0",
    )
    .await;
    save(
        &runtime,
        "maker",
        "async (input) => input ? await Function('i', \"return codemode.run('maker', i)\")(input) : 0",
    )
    .await;
    for name in ["inner", "maker"] {
        let outcome = runtime
            .call(&format!("async () => codemode.run('{name}', {{ go: 1 }})"))
            .await
            .unwrap();
        let Outcome::Error { error, .. } = &outcome else {
            panic!("{name}: {outcome:?}");
        };
        assert!(
            error.contains(&format!("snippet {name} -> {name} runs itself")),
            "{name}: {error}"
        );
    }
}
