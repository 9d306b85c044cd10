//! The checks of `reference_behaviour.rs`, one per row of `docs/reference.md` that claims a
//! behaviour: each takes a fresh temporary directory and says what it found wrong.

use super::Checked;
use codemode::discovery::{estimated_tokens, DEFAULT_DESCRIPTION_TOKENS};
use codemode::runtime::{ToolOptions, TOOL_EXAMPLE};
use codemode::{
    truncate_result, CodeOutcome, CodeTool, ExecutionStatus, Outcome, Runtime, RuntimeBuilder,
    RuntimeError, RustConnector, RustTool, SaveSnippet, TruncateOptions,
};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn runtime_with(dir: &Path, setup: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder) -> Runtime {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).expect("store"));
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    setup(Runtime::builder(store, executor))
        .build()
        .expect("the runtime builds")
}

/// `probe.read(args)` returns its arguments; read-only.
fn probe() -> RustConnector {
    RustConnector::new("probe")
        .tool(RustTool::new("read", |args, _ctx| async move { Ok(args) }).read_only())
}

/// `gate.write(args)`: needs approval (no policy, not read-only).
fn gate() -> RustConnector {
    RustConnector::new("gate").tool(RustTool::new("write", |_a, _c| async { Ok(json!("ok")) }))
}

async fn run(runtime: &Runtime, code: &str) -> Result<Outcome, String> {
    runtime.call(code).await.map_err(|e| format!("{code}: {e}"))
}

async fn result_of(runtime: &Runtime, code: &str) -> Result<Value, String> {
    match run(runtime, code).await? {
        Outcome::Completed { result, .. } => Ok(result),
        other => Err(format!("{code} did not complete: {other:?}")),
    }
}

/// Runs `code` (it must complete) and saves it as snippet `name`.
async fn save(runtime: &Runtime, name: &str, code: &str) -> Checked {
    let outcome = run(runtime, code).await?;
    ensure!(
        matches!(outcome, Outcome::Completed { .. }),
        "{code}: {outcome:?}"
    );
    let options = SaveSnippet {
        execution_id: outcome.execution_id().to_string(),
        ..SaveSnippet::default()
    };
    runtime
        .save_snippet(name, options)
        .await
        .map(drop)
        .map_err(|e| format!("saving {name}: {e}"))
}

pub fn snippet_depth(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| b.connector(probe()));
        save(
            &runtime,
            "again",
            "async (input) => input ? await codemode.run('again', input) : 0",
        )
        .await?;
        let caught = "async () => { try { return await codemode.run('again', 1) } catch (e) { return e.message } }";
        let message = result_of(&runtime, caught).await?;
        let message = message.as_str().unwrap_or_default();
        ensure!(
            message.contains("snippet again -> again runs itself"),
            "a snippet running itself: {message}"
        );
        // s0 runs s1 … runs s9: s1 to s9 nest 9 deep, s2 to s9 nest 8.
        for i in 0..10 {
            let code = if i == 9 {
                "async () => 'deep'".to_string()
            } else {
                format!(
                    "async (input) => input ? await codemode.run('s{}', 1) : 0",
                    i + 1
                )
            };
            save(&runtime, &format!("s{i}"), &code).await?;
        }
        let eight = result_of(&runtime, "async () => await codemode.run('s2', 1)").await?;
        ensure!(eight == json!("deep"), "8 deep: {eight}");
        let nine = "async () => { try { return await codemode.run('s1', 1) } catch (e) { return e.message } }";
        let nine = result_of(&runtime, nine).await?;
        ensure!(
            nine.as_str()
                .is_some_and(|m| m.contains("snippets nest 9 deep") && m.contains("limit of 8")),
            "9 deep: {nine}"
        );
        Ok(())
    })
}

/// A connector `name` of `methods` tools, each with `fields` described input fields.
fn sized(name: &str, methods: usize, fields: usize) -> RustConnector {
    (0..methods).fold(RustConnector::new(name), |c, i| {
        let properties: serde_json::Map<String, Value> = (0..fields)
            .map(|f| {
                let field = json!({ "type": "string", "description": format!("Field {f}.") });
                (format!("field_{f}"), field)
            })
            .collect();
        c.tool(
            RustTool::new(format!("{name}_{i}"), |_a, _c| async { Ok(json!(null)) })
                .description(format!("Method {i} of {name}."))
                .input_schema(json!({ "type": "object", "properties": properties }))
                .read_only(),
        )
    })
}

pub fn description_budget(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| {
            b.connector(sized("small", 3, 2))
                .connector(sized("big", 200, 8))
                .connector(sized("other", 2, 1))
        });
        let text = runtime.tool().description;
        let tokens = estimated_tokens(&text);
        ensure!(
            tokens <= DEFAULT_DESCRIPTION_TOKENS,
            "{tokens} tokens:\n{text}"
        );
        for method in ["  small_0(", "  small_2(", "  other_1("] {
            ensure!(text.contains(method), "{method} is not declared:\n{text}");
        }
        ensure!(
            !text.contains("  big_0(") && !text.contains("  big_199("),
            "big is declared (in whole or part):\n{text}"
        );
        ensure!(
            text.contains("- big (200 methods)")
                && text.contains("the methods of big.")
                && text.contains(r#"codemode.describe("big")"#),
            "big is not named as left out:\n{text}"
        );
        let none = runtime
            .tool_with(ToolOptions {
                max_description_tokens: Some(0),
                ..ToolOptions::default()
            })
            .map_err(|e| e.to_string())?
            .description;
        ensure!(
            !none.contains("  small_0(") && none.contains("the methods of small, big, other."),
            "a budget of 0 still declares:\n{none}"
        );
        Ok(())
    })
}

pub fn runtime_template(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| b.connector(probe()));
        let options = |text: &str| ToolOptions {
            description: Some(text.to_string()),
            ..ToolOptions::default()
        };
        let filled = runtime
            .tool_with(options("Code.\n{{types}}\n{{example}}"))
            .map_err(|e| e.to_string())?;
        ensure!(
            filled.description == format!("Code.\n{}\n{TOOL_EXAMPLE}", runtime.types()),
            "{}",
            filled.description
        );
        match runtime.tool_with(options("Code. {{tools}}")) {
            Err(RuntimeError::InvalidConfig(m)) => ensure!(
                m.contains("{{tools}}") && m.contains("{{types}} and {{example}}"),
                "{m}"
            ),
            other => return Err(format!("an unknown placeholder gave {other:?}")),
        }
        Ok(())
    })
}

pub fn fail_closed(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| b.connector(probe()).connector(gate()));
        let read = result_of(&runtime, "async () => probe.read({ a: 1 })").await?;
        ensure!(read == json!({ "a": 1 }), "the read-only call: {read}");
        let outcome = run(&runtime, "async () => gate.write({})").await?;
        let Outcome::Paused { execution_id, .. } = outcome else {
            return Err(format!("a tool without a policy ran: {outcome:?}"));
        };
        let approved = runtime
            .approve(&execution_id)
            .await
            .map_err(|e| e.to_string())?;
        ensure!(
            matches!(&approved, Outcome::Completed { result, .. } if *result == json!("ok")),
            "after approval: {approved:?}"
        );
        Ok(())
    })
}

pub fn rollback_report(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let reverted = Arc::new(Mutex::new(Vec::new()));
        let log = reverted.clone();
        let ledger = RustConnector::new("ledger")
            .tool(
                RustTool::new("add", |args, _ctx| async move { Ok(args) })
                    .requires_approval(false)
                    .revert(move |args, _result, _ctx| {
                        let log = log.clone();
                        async move {
                            log.lock().expect("lock").push(args["n"].clone());
                            Ok(())
                        }
                    }),
            )
            .tool(
                RustTool::new("notify", |_a, _c| async { Ok(json!(null)) })
                    .requires_approval(false),
            );
        let runtime = runtime_with(&dir, |b| b.connector(ledger));
        let code = "async () => { await ledger.add({ n: 1 }); await ledger.notify({}); await ledger.add({ n: 2 }); }";
        let outcome = run(&runtime, code).await?;
        let report = runtime
            .rollback(outcome.execution_id())
            .await
            .map_err(|e| e.to_string())?;
        ensure!(
            report.reverted == [2, 0],
            "reverted, newest first: {report:?}"
        );
        ensure!(report.skipped == [1], "not undone: {report:?}");
        ensure!(report.failed.is_empty(), "{report:?}");
        ensure!(report.status == ExecutionStatus::RolledBack, "{report:?}");
        let order = reverted.lock().expect("lock").clone();
        ensure!(order == [json!(2), json!(1)], "reverts ran as {order:?}");
        Ok(())
    })
}

pub fn delete_refuses_live_runs(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| b.connector(gate()));
        let paused = run(&runtime, "async () => gate.write({})").await?;
        let id = paused.execution_id().to_string();
        match runtime.delete_execution(&id).await {
            Err(RuntimeError::WrongStatus { status, .. }) => {
                ensure!(status == ExecutionStatus::Paused, "refused as {status}")
            }
            other => return Err(format!("deleting a paused run gave {other:?}")),
        }
        let pending = runtime
            .pending(Some(&id))
            .await
            .map_err(|e| e.to_string())?;
        ensure!(pending.len() == 1, "the paused run lost its action");
        runtime
            .reject(&id, pending[0].seq)
            .await
            .map_err(|e| e.to_string())?;
        let deleted = runtime.delete_execution(&id).await;
        ensure!(matches!(deleted, Ok(true)), "a rejected run: {deleted:?}");
        let gone = runtime.execution(&id).await.map_err(|e| e.to_string())?;
        ensure!(gone.is_none(), "still there after delete");
        Ok(())
    })
}

pub fn save_snippet_flags(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| b.connector(probe()));
        let failed = run(&runtime, "async () => { throw new Error('no') }").await?;
        ensure!(
            matches!(failed, Outcome::Error { .. }),
            "expected an error: {failed:?}"
        );
        let from = |force, replace| SaveSnippet {
            execution_id: failed.execution_id().to_string(),
            force,
            replace,
            ..SaveSnippet::default()
        };
        let refused = runtime.save_snippet("failing", from(false, false)).await;
        ensure!(
            matches!(&refused, Err(RuntimeError::Snippet(m)) if m.contains("only a completed execution")),
            "an error run saved without force: {refused:?}"
        );
        let forced = runtime.save_snippet("failing", from(true, false)).await;
        ensure!(forced.is_ok(), "with force: {forced:?}");
        let again = runtime.save_snippet("failing", from(true, false)).await;
        ensure!(
            matches!(&again, Err(RuntimeError::Snippet(m)) if m.contains("save with replace")),
            "an existing name replaced without replace: {again:?}"
        );
        let replaced = runtime.save_snippet("failing", from(true, true)).await;
        ensure!(replaced.is_ok(), "with replace: {replaced:?}");
        Ok(())
    })
}

pub fn missing_snippet_or_connector(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        {
            let first = runtime_with(&dir, |b| b.connector(probe()));
            save(&first, "reads", "async () => probe.read({})").await?;
        }
        let other = RustConnector::new("other")
            .tool(RustTool::new("ping", |_a, _c| async { Ok(json!(1)) }).read_only());
        let runtime = runtime_with(&dir, |b| b.connector(other));
        let code = "async () => [await codemode.run('nope', {}), await codemode.run('reads', {})]";
        let both = result_of(&runtime, code).await?;
        let missing = both[0]["error"].as_str().unwrap_or_default();
        ensure!(
            missing.contains("no snippet named \"nope\""),
            "a missing snippet: {both}"
        );
        let lacking = both[1]["error"].as_str().unwrap_or_default();
        ensure!(
            lacking.contains("needs connector(s) probe"),
            "a missing connector: {both}"
        );
        Ok(())
    })
}

pub fn clock_and_chance_replay(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| b.connector(gate()));
        let code = r#"async () => {
            const seen = { t: Date.now(), d: new Date().getTime(), r: Math.random() };
            const first = await codemode.step("first", () => seen);
            await gate.write({});
            return { first, seen };
        }"#;
        let paused = run(&runtime, code).await?;
        ensure!(
            matches!(paused, Outcome::Paused { .. }),
            "expected a pause: {paused:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let outcome = runtime
            .approve(paused.execution_id())
            .await
            .map_err(|e| e.to_string())?;
        let Outcome::Completed { result, .. } = outcome else {
            return Err(format!("after approval: {outcome:?}"));
        };
        ensure!(
            result["first"] == result["seen"] && result["seen"]["t"].is_number(),
            "the replay read other values than the first pass: {result}"
        );
        Ok(())
    })
}

pub fn transform_keeps_original(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let runtime = runtime_with(&dir, |b| {
            b.connector(probe())
                .transform_result(|v| json!({ "shown": v }))
        });
        let outcome = run(&runtime, "async () => 7").await?;
        let Outcome::Completed {
            execution_id,
            result,
            ..
        } = outcome
        else {
            return Err(format!("{outcome:?}"));
        };
        ensure!(result == json!({ "shown": 7 }), "the model saw {result}");
        let record = runtime
            .execution(&execution_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no record")?;
        ensure!(
            record.result == Some(json!(7)),
            "the record keeps {:?}",
            record.result
        );
        Ok(())
    })
}

pub fn positional_arguments(dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let files = RustConnector::new("files").positional_args().tool(
            RustTool::new("copy", |args, _ctx| async move { Ok(args) })
                .input_schema(json!({
                    "type": "object",
                    "properties": { "overwrite": { "type": "boolean" }, "from": { "type": "string" }, "to": { "type": "string" } },
                    "required": ["from", "to"]
                }))
                .read_only(),
        );
        let runtime = runtime_with(&dir, |b| b.connector(files));
        let outcome = run(&runtime, "async () => files.copy('/a', '/b', true)").await?;
        let Outcome::Completed {
            execution_id,
            result,
            ..
        } = outcome
        else {
            return Err(format!("{outcome:?}"));
        };
        let object = json!({ "from": "/a", "to": "/b", "overwrite": true });
        ensure!(result == object, "the tool received {result}");
        let record = runtime
            .execution(&execution_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no record")?;
        ensure!(
            record.log.first().is_some_and(|e| e.args == object),
            "the log recorded {:?}",
            record.log.first().map(|e| &e.args)
        );
        Ok(())
    })
}

fn code_tool_over(connector: RustConnector) -> Result<CodeTool, String> {
    CodeTool::builder(Arc::new(codemode_quickjs::QuickJsExecutor::default()))
        .connector(connector)
        .build()
        .map_err(|e| e.to_string())
}

pub fn code_tool_leaves_out_approval(_dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let mixed = RustConnector::new("mail")
            .tool(RustTool::new("inbox", |_a, _c| async { Ok(json!(["hi"])) }).read_only())
            .tool(RustTool::new("send", |_a, _c| async { Ok(json!("sent")) }));
        let tool = code_tool_over(mixed)?;
        let warnings = tool.warnings();
        ensure!(
            warnings.len() == 1
                && warnings[0].contains("`send`")
                && warnings[0].contains("cannot pause for a person"),
            "{warnings:?}"
        );
        ensure!(
            !tool.types().contains("send(") && tool.types().contains("inbox("),
            "{}",
            tool.types()
        );
        ensure!(
            tool.search("send mail")
                .results
                .iter()
                .all(|r| r.path != "mail.send"),
            "search finds mail.send"
        );
        let code =
            "async () => { try { return await mail.send({}) } catch (e) { return 'thrown' } }";
        let outcome = tool.call(code).await;
        ensure!(
            matches!(&outcome, CodeOutcome::Completed { result, .. } if *result == json!("thrown")),
            "calling a left-out tool: {outcome:?}"
        );
        let inbox = tool.call("async () => mail.inbox({})").await;
        ensure!(
            matches!(&inbox, CodeOutcome::Completed { result, .. } if *result == json!(["hi"])),
            "{inbox:?}"
        );
        Ok(())
    })
}

pub fn code_tool_template(_dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let builder = |text: &str| {
            CodeTool::builder(Arc::new(codemode_quickjs::QuickJsExecutor::default()))
                .connector(probe())
                .description(text)
                .build()
        };
        let tool = builder("Probe.\n{{types}}\n{{example}}").map_err(|e| e.to_string())?;
        let expected = format!("Probe.\n{}\n{TOOL_EXAMPLE}", tool.types());
        ensure!(
            tool.tool().description == expected,
            "{}",
            tool.tool().description
        );
        match builder("{{ tools }}") {
            Err(RuntimeError::InvalidConfig(m)) => ensure!(
                m.contains("{{tools}}") && m.contains("{{types}} and {{example}}"),
                "{m}"
            ),
            Err(other) => return Err(format!("an unknown placeholder gave {other}")),
            Ok(_) => return Err("an unknown placeholder was accepted".into()),
        }
        Ok(())
    })
}

pub fn truncation(_dir: PathBuf) -> BoxFuture<'static, Checked> {
    Box::pin(async move {
        let options = || TruncateOptions {
            max_chars: Some(2_000),
            max_tokens: None,
        };
        let small = json!({ "a": [1, 2, 3], "b": "text" });
        ensure!(
            truncate_result(small.clone(), options()) == small,
            "a small value changed"
        );
        let rows: Vec<Value> = (0..500)
            .map(|i| json!({ "id": i, "name": format!("row {i}") }))
            .collect();
        let cut = truncate_result(Value::Array(rows), options());
        let size = serde_json::to_string(&cut)
            .map_err(|e| e.to_string())?
            .len();
        ensure!(
            cut.is_array() && size <= 2_000,
            "cut to {size} chars: {cut}"
        );
        ensure!(
            cut[0] == json!({ "id": 0, "name": "row 0" }),
            "the first row changed shape: {}",
            cut[0]
        );
        Ok(())
    })
}
