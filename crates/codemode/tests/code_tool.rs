//! The stateless code tool with the real QuickJS sandbox.

use codemode::{CodeOutcome, CodeTool, RuntimeError, RustConnector, RustTool};
use codemode_quickjs::QuickJsExecutor;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn executor() -> Arc<QuickJsExecutor> {
    Arc::new(QuickJsExecutor::default())
}

/// `notes.add({text})` appends to `store` and returns the new count; `notes.list()` reads it.
fn notes(store: Arc<Mutex<Vec<String>>>) -> RustConnector {
    let list_store = store.clone();
    RustConnector::new("notes")
        .instructions("A list of short notes.")
        .tool(
            RustTool::new("add", move |args: Value, _ctx| {
                let store = store.clone();
                async move {
                    let mut notes = store.lock().unwrap();
                    notes.push(args["text"].as_str().unwrap_or_default().to_string());
                    Ok(json!({ "count": notes.len() }))
                }
            })
            .description("Adds a note to the list.")
            .input_schema(json!({
                "type": "object",
                "properties": { "text": { "type": "string", "description": "The note." } },
                "required": ["text"],
                "additionalProperties": false
            }))
            .requires_approval(false),
        )
        .tool(
            RustTool::new("list", move |_args, _ctx| {
                let store = list_store.clone();
                async move { Ok(json!(*store.lock().unwrap())) }
            })
            .description("Lists every note.")
            .read_only(),
        )
}

fn tool_over(store: Arc<Mutex<Vec<String>>>) -> CodeTool {
    CodeTool::builder(executor())
        .connector(notes(store))
        .build()
        .expect("the notes connector needs no approval")
}

fn error_of(outcome: CodeOutcome) -> String {
    match outcome {
        CodeOutcome::Error { error, .. } => error,
        other => panic!("expected an error outcome, got {other:?}"),
    }
}

#[tokio::test]
async fn a_call_runs_the_tools_and_returns_the_result() {
    let store = Arc::new(Mutex::new(Vec::new()));
    let tool = tool_over(store.clone());
    let outcome = tool
        .call(
            r#"async () => {
                await notes.add({ text: "milk" });
                const { count } = await notes.add({ text: "eggs" });
                return { count, all: await notes.list() };
            }"#,
        )
        .await;
    assert_eq!(
        outcome,
        CodeOutcome::Completed {
            result: json!({ "count": 2, "all": ["milk", "eggs"] }),
            logs: vec![],
        }
    );
    assert_eq!(*store.lock().unwrap(), vec!["milk", "eggs"]);
}

#[tokio::test]
async fn console_output_comes_back_with_the_result() {
    let tool = tool_over(Arc::default());
    let outcome = tool
        .call(
            r#"async () => { console.log("hello", { a: 1 }); console.warn("careful"); return 7; }"#,
        )
        .await;
    assert_eq!(
        outcome,
        CodeOutcome::Completed {
            result: json!(7),
            logs: vec![r#"hello {"a":1}"#.to_string(), "[warn] careful".to_string()],
        }
    );
}

#[tokio::test]
async fn a_thrown_error_names_its_line_and_keeps_the_logs() {
    let tool = tool_over(Arc::default());
    let outcome = tool
        .call("async () => {\n  console.log(\"before\");\n  throw new Error(\"boom\");\n}")
        .await;
    let CodeOutcome::Error {
        error,
        logs,
        code,
        retryable,
    } = outcome
    else {
        panic!("expected an error, got {outcome:?}");
    };
    assert_eq!((code, retryable), (codemode::ErrorCode::Thrown, false));
    assert!(error.contains("boom"), "{error}");
    assert!(error.contains("line 3"), "the line is missing: {error}");
    assert_eq!(logs, vec!["before".to_string()]);
}

#[tokio::test]
async fn an_invalid_argument_is_thrown_into_the_code_and_the_tool_does_not_run() {
    let store = Arc::new(Mutex::new(Vec::new()));
    let tool = tool_over(store.clone());
    let outcome = tool
        .call(
            r#"async () => {
                try { await notes.add({ text: 42 }); } catch (e) { return e.message; }
                return "no error";
            }"#,
        )
        .await;
    let CodeOutcome::Completed { result, .. } = outcome else {
        panic!("expected the code to catch the error, got {outcome:?}");
    };
    let message = result.as_str().unwrap_or_default();
    assert!(message.contains("notes.add: invalid input"), "{message}");
    assert!(
        message.contains("/text"),
        "the field is not named: {message}"
    );
    assert!(
        message.contains(r#"codemode.describe("notes.add")"#),
        "{message}"
    );
    assert!(store.lock().unwrap().is_empty(), "the tool ran");
}

#[tokio::test]
async fn a_tool_that_requires_approval_is_left_out_with_a_warning() {
    let sent = Arc::new(AtomicUsize::new(0));
    let count = sent.clone();
    let gated = RustConnector::new("mail")
        .tool(
            RustTool::new("read", |_a, _c| async { Ok(json!(["hello"])) })
                .description("Reads the inbox.")
                .read_only(),
        )
        .tool(
            RustTool::new("send", move |_a, _c| {
                let count = count.clone();
                async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    Ok(json!(null))
                }
            })
            .description("Sends an email."),
        )
        .tool(
            RustTool::new("purge", |_a, _c| async { Ok(json!(null)) })
                .description("Deletes every email.")
                .requires_approval(true),
        );
    let tool = CodeTool::builder(executor())
        .connector(gated)
        .connector(notes(Arc::default()))
        .build()
        .expect("tools that require approval are left out, not refused");

    let warnings = tool.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    for needle in [
        "connector `mail`",
        "`send`, `purge` left out of the code tool",
        "they require approval",
        "cannot pause for a person",
        ".read_only()",
        ".requires_approval(false)",
        "durable Runtime",
    ] {
        assert!(warning.contains(needle), "{needle:?} in {warning}");
    }
    assert!(!warning.contains("`read`"), "{warning}");

    // Not in the description, the types, search or describe.
    let description = tool.tool().description;
    assert!(description.contains("- mail (1 method)"), "{description}");
    assert!(!description.contains("send("), "{description}");
    let types = tool.types();
    assert!(types.contains("read("), "{types}");
    assert!(
        !types.contains("send(") && !types.contains("purge("),
        "{types}"
    );
    assert!(tool
        .search("send an email")
        .results
        .iter()
        .all(|r| r.path != "mail.send"));
    assert!(tool.describe("mail.send").is_err());

    // Not callable: the code is told it is not a method, and it never runs.
    let outcome = tool
        .call(
            r#"async () => {
                try { await mail.send({ to: "bob" }); return "sent"; } catch (e) { return e.message; }
            }"#,
        )
        .await;
    let CodeOutcome::Completed { result, .. } = outcome else {
        panic!("expected the code to catch the error, got {outcome:?}");
    };
    assert_ne!(result, json!("sent"));
    assert!(
        result.as_str().unwrap_or_default().contains("send"),
        "{result}"
    );
    assert_eq!(sent.load(Ordering::SeqCst), 0, "a left-out tool ran");
    assert_eq!(
        tool.call("async () => mail.read({})").await,
        CodeOutcome::Completed {
            result: json!(["hello"]),
            logs: vec![],
        }
    );

    // A code tool without such tools has no warnings.
    assert!(tool_over(Arc::default()).warnings().is_empty());
}

#[test]
fn the_description_template_fills_types_and_example() {
    let tool = CodeTool::builder(executor())
        .connector(notes(Arc::default()))
        .description("Notes as code.\n{{types}}\nFor example:\n{{ example }}\n")
        .build()
        .unwrap();
    assert_eq!(
        tool.tool().description,
        format!(
            "Notes as code.\n{}\nFor example:\n{}\n",
            tool.types(),
            codemode::runtime::TOOL_EXAMPLE
        )
    );
    let refused = CodeTool::builder(executor())
        .connector(notes(Arc::default()))
        .description("Use {{tools}} here")
        .build();
    let Err(RuntimeError::InvalidConfig(message)) = refused else {
        panic!("an unknown placeholder was accepted");
    };
    assert!(message.contains("{{tools}}"), "{message}");
    assert!(message.contains("{{types}} and {{example}}"), "{message}");
}

#[test]
fn the_description_keeps_to_its_token_budget() {
    use codemode::discovery::estimated_tokens;
    let roomy = CodeTool::builder(executor())
        .connector(notes(Arc::default()))
        .build()
        .unwrap()
        .tool()
        .description;
    assert!(
        roomy.contains("Declarations of every connector method"),
        "{roomy}"
    );
    assert!(roomy.contains("add(input: AddInput)"), "{roomy}");
    let tight = CodeTool::builder(executor())
        .connector(notes(Arc::default()))
        .max_description_tokens(estimated_tokens(&roomy) - 1)
        .build()
        .unwrap()
        .tool()
        .description;
    assert!(!tight.contains("add(input: AddInput)"), "{tight}");
    assert!(
        tight.contains("the methods of notes") && tight.contains(r#"codemode.describe("notes")"#),
        "{tight}"
    );
}

#[tokio::test]
async fn search_and_describe_work_inside_the_sandbox() {
    let tool = tool_over(Arc::default());
    let outcome = tool
        .call(
            r#"async () => {
                const found = await codemode.search("add a note");
                const docs = await codemode.describe(found.results[0].path);
                return { path: found.results[0].path, types: docs.types };
            }"#,
        )
        .await;
    let CodeOutcome::Completed { result, .. } = outcome else {
        panic!("expected a result, got {outcome:?}");
    };
    assert_eq!(result["path"], "notes.add");
    let types = result["types"].as_str().unwrap_or_default();
    assert!(types.contains("text: string"), "{types}");
    assert_eq!(tool.search("add a note").results[0].path, "notes.add");
    assert!(tool.describe("notes").is_ok());
    assert!(tool.describe("nothing").is_err());
}

#[tokio::test]
async fn the_tool_definition_is_the_durable_runtimes() {
    let tool = CodeTool::builder(executor())
        .connector(notes(Arc::default()))
        .hint("notes", "short notes")
        .build()
        .unwrap();
    let definition = tool.tool();
    assert_eq!(definition.name, "codemode");
    assert!(definition
        .description
        .contains("- notes (2 methods): short notes"));
    assert_eq!(
        definition.input_schema,
        codemode::discovery::code_input_schema()
    );
    assert!(
        tool.types().contains("declare const notes"),
        "{}",
        tool.types()
    );
}

#[tokio::test]
async fn step_runs_its_function_once_per_call_and_records_nothing() {
    let tool = tool_over(Arc::default());
    let code = r#"async () => {
        let runs = 0;
        const a = await codemode.step("one", () => { runs += 1; return 41; });
        const b = await codemode.step("two", async () => { runs += 1; return a + 1; });
        return { a, b, runs };
    }"#;
    for _ in 0..2 {
        assert_eq!(
            tool.call(code).await,
            CodeOutcome::Completed {
                result: json!({ "a": 41, "b": 42, "runs": 2 }),
                logs: vec![],
            }
        );
    }
    let error = error_of(
        tool.call(r#"async () => codemode.step("bad", () => { throw new Error("in step"); })"#)
            .await,
    );
    assert!(error.contains("in step"), "{error}");
}

#[tokio::test]
async fn run_of_a_snippet_is_a_clear_error() {
    let tool = tool_over(Arc::default());
    let error = error_of(tool.call(r#"async () => codemode.run("daily", {})"#).await);
    assert!(error.contains("codemode.run"), "{error}");
    assert!(error.contains("no saved snippets"), "{error}");
}

#[tokio::test]
async fn each_call_gets_its_own_id_and_sequence_and_ends_with_dispose() {
    let contexts = Arc::new(Mutex::new(Vec::new()));
    let disposed = Arc::new(AtomicUsize::new(0));
    let seen = contexts.clone();
    let count = disposed.clone();
    let probe = RustConnector::new("probe")
        .tool(
            RustTool::new("ping", move |_args, ctx| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(ctx);
                    Ok(json!("pong"))
                }
            })
            .read_only(),
        )
        .on_dispose(move |_id, _status| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        });
    let tool = CodeTool::builder(executor())
        .connector(probe)
        .build()
        .unwrap();
    let code = "async () => { await probe.ping(); await probe.ping(); }";
    tool.call(code).await;
    tool.call(code).await;
    let contexts = contexts.lock().unwrap();
    let seqs: Vec<u64> = contexts.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, vec![0, 1, 0, 1]);
    assert_eq!(contexts[0].execution_id, contexts[1].execution_id);
    assert_ne!(contexts[0].execution_id, contexts[2].execution_id);
    assert_eq!(disposed.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn transform_result_reshapes_what_the_model_sees() {
    let tool = CodeTool::builder(executor())
        .connector(notes(Arc::default()))
        .transform_result(|value| json!({ "wrapped": value }))
        .build()
        .unwrap();
    assert_eq!(
        tool.call("async () => 1").await,
        CodeOutcome::Completed {
            result: json!({ "wrapped": 1 }),
            logs: vec![],
        }
    );
}

#[tokio::test]
async fn a_tool_error_is_thrown_into_the_code_with_its_message() {
    let failing = RustConnector::new("bank").tool(
        RustTool::new("balance", |_args, _ctx| async {
            Err(codemode::ToolError::new("account 7 is closed"))
        })
        .read_only(),
    );
    let tool = CodeTool::builder(executor())
        .connector(failing)
        .build()
        .unwrap();
    let outcome = tool
        .call(
            r#"async () => {
                try { await bank.balance({}); } catch (e) { return `caught: ${e.message}`; }
            }"#,
        )
        .await;
    assert_eq!(
        outcome,
        CodeOutcome::Completed {
            result: json!("caught: account 7 is closed"),
            logs: vec![],
        }
    );
}

#[tokio::test]
async fn concurrent_calls_all_run() {
    let store = Arc::new(Mutex::new(Vec::new()));
    let tool = tool_over(store.clone());
    let outcome = tool
        .call(
            r#"async () => {
                await Promise.all(["a", "b", "c"].map((text) => notes.add({ text })));
                return (await notes.list()).length;
            }"#,
        )
        .await;
    assert_eq!(
        outcome,
        CodeOutcome::Completed {
            result: json!(3),
            logs: vec![],
        }
    );
}
