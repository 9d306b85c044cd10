//! What a model sees for the mistakes it plausibly makes: each wrong program gets an exact
//! error text that names what to change, a stable `code`, and `retryable`; the code is the
//! same when the outcome is read back from the store. One test per code the table cannot
//! show (a divergence, a rejection, a cancel), and the bad inputs of error reporting.

use codemode::{Actor, ErrorCode, Outcome, Runtime, RustConnector, RustTool, Store, ToolError};
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use codemode_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A to-do connector: a read, a write that needs approval, a write that fails for an
/// unknown task, and a counter that runs again on every pass.
fn tasks() -> RustConnector {
    let counter = Arc::new(AtomicU64::new(0));
    RustConnector::new("tasks")
        .tool(
            RustTool::new("list_tasks", |_args: Value, _ctx| async move {
                Ok::<Value, ToolError>(
                    json!({"tasks": [{"id": 1, "title": "write docs", "done": false}]}),
                )
            })
            .description("Lists tasks, optionally only open or done ones.")
            .input_schema(json!({
                "type": "object",
                "properties": {"status": {"enum": ["open", "done"]}},
                "additionalProperties": false
            }))
            .read_only(),
        )
        .tool(
            RustTool::new("create_task", |args: Value, _ctx| async move {
                Ok::<Value, ToolError>(json!({"id": 2, "title": args["title"], "done": false}))
            })
            .description("Creates a task. Needs approval.")
            .input_schema(json!({
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"],
                "additionalProperties": false
            }))
            .requires_approval(true),
        )
        .tool(
            RustTool::new("add_note", |args: Value, _ctx| async move {
                match args["id"].as_i64() {
                    Some(1) => Ok(json!({"id": 1, "note": args["text"]})),
                    _ => Err(ToolError(format!(
                        "task {} does not exist; list_tasks gives the ids",
                        args["id"]
                    ))),
                }
            })
            .description("Adds a note to a task.")
            .requires_approval(false)
            .input_schema(json!({
                "type": "object",
                "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
                "required": ["id", "text"],
                "additionalProperties": false
            })),
        )
        .tool(
            RustTool::new("counter", move |_args: Value, _ctx| {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<Value, ToolError>(json!(n)) }
            })
            .description("A number that goes up on every call (runs again on every pass).")
            .input_schema(json!({"type": "object"}))
            .requires_approval(false)
            .reexecute(),
        )
}

/// A connector whose one method answers after `ms` milliseconds.
fn slow() -> RustConnector {
    RustConnector::new("slow").tool(
        RustTool::new("wait", |args: Value, _ctx| async move {
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<Value, ToolError>(json!({"waited": ms}))
        })
        .description("Waits.")
        .input_schema(json!({"type": "object", "properties": {"ms": {"type": "integer"}}}))
        .read_only(),
    )
}

fn runtime(dir: &tempfile::TempDir) -> Runtime {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    let options = QuickJsOptions {
        wall_time: Duration::from_millis(1_500),
        memory_limit: 32 * 1024 * 1024,
        ..Default::default()
    };
    Runtime::builder(store, Arc::new(QuickJsExecutor::new(options)))
        .connector(tasks())
        .connector(slow())
        .unavailable_connector("calendar", "the server asked for sign-in")
        .call_timeout_for("slow", Duration::from_millis(200))
        .max_calls(100)
        .build()
        .unwrap()
}

/// Runs `code` to its end; returns the error outcome's text, code and retryable, and checks
/// that the stored execution gives the same code.
async fn error_of(rt: &Runtime, code: &str) -> (String, ErrorCode, bool) {
    let outcome = rt.call(code).await.unwrap();
    let Outcome::Error {
        execution_id,
        error,
        code: error_code,
        retryable,
        ..
    } = outcome
    else {
        return (
            format!("not an error: {outcome:?}"),
            ErrorCode::Internal,
            false,
        );
    };
    let stored = rt.execution(&execution_id).await.unwrap().unwrap();
    assert_eq!(
        ErrorCode::of_execution(&stored),
        Some(error_code),
        "{code}: the stored execution reads back with another code"
    );
    assert_eq!(retryable, error_code.retryable());
    (error, error_code, retryable)
}

const SEARCH: &str = "codemode.search finds tools by what they do";
const GLOBALS: &str = "the only globals available in the sandbox are: tasks, slow, calendar, codemode, console (and the standard JavaScript built-ins such as JSON, Math, Date, Promise); there is no fetch, require, process or file system";
const UNDEFINED: &str = "the value before it is undefined: check the field name against the type codemode.describe(\"connector.method\") shows, and that every connector call is awaited";

/// The wrong programs: what the model wrote, the code it gets, and the exact error.
fn table() -> Vec<(&'static str, &'static str, ErrorCode, String)> {
    use ErrorCode::*;
    vec![
        (
            "a method one letter off",
            "return await tasks.create_tasks({ title: 'x' })",
            NotFound,
            format!("TypeError: tasks.create_tasks is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH}; codemode.describe(\"tasks.create_task\") shows its input) (line 1, column 19)"),
        ),
        (
            "a method in another case",
            "return await tasks.createTask({ title: 'x' })",
            NotFound,
            format!("TypeError: tasks.createTask is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH}; codemode.describe(\"tasks.create_task\") shows its input) (line 1, column 19)"),
        ),
        (
            "a connector one letter off",
            "return await task.list_tasks()",
            NotFound,
            format!("ReferenceError: task is not defined (line 1, column 14); did you mean tasks? {GLOBALS}"),
        ),
        (
            "a connector that failed to start",
            "return await calendar.list_events({ day: 'today' })",
            Unavailable,
            "Error: connector calendar failed to start: the server asked for sign-in (line 1, column 22)".to_string(),
        ),
        (
            "a required field left out",
            "return await tasks.add_note({ text: 'hi' })",
            Schema,
            "Error: tasks.add_note: invalid input: \"id\" is a required property. See codemode.describe(\"tasks.add_note\") for the input type.".to_string(),
        ),
        (
            "a field of the wrong type",
            "return await tasks.add_note({ id: '1', text: 'hi' })",
            Schema,
            "Error: tasks.add_note: invalid input: at /id: \"1\" is not of type \"integer\". See codemode.describe(\"tasks.add_note\") for the input type.".to_string(),
        ),
        (
            "a field that does not exist",
            "return await tasks.list_tasks({ state: 'open' })",
            Schema,
            "Error: tasks.list_tasks: invalid input: Additional properties are not allowed ('state' was unexpected). See codemode.describe(\"tasks.list_tasks\") for the input type.".to_string(),
        ),
        (
            "positional arguments for an object input",
            "return await tasks.add_note(1, 'hi')",
            Schema,
            "Error: tasks.add_note: invalid input: 1 is not of type \"object\". See codemode.describe(\"tasks.add_note\") for the input type.".to_string(),
        ),
        (
            "a call not awaited",
            "const r = tasks.list_tasks();\nreturn r.tasks.length",
            Thrown,
            format!("TypeError: cannot read property 'length' of undefined (line 2, column 8); {UNDEFINED}"),
        ),
        (
            "a thrown string",
            "const { tasks: all } = await tasks.list_tasks();\nif (all.length < 5) throw 'not enough tasks';\nreturn all",
            Thrown,
            "Uncaught not enough tasks (throw an Error to get a line number)".to_string(),
        ),
        (
            "a field read from the wrong place",
            "const r = await tasks.list_tasks();\nreturn r.items.map((t) => t.title)",
            Thrown,
            format!("TypeError: cannot read property 'map' of undefined (line 2, column 8); {UNDEFINED}"),
        ),
        (
            "a connector error not caught",
            "return await tasks.add_note({ id: 99, text: 'hi' })",
            Connector,
            "Error: task 99 does not exist; list_tasks gives the ids (the failure came from tasks.add_note)".to_string(),
        ),
        (
            "a connector error caught and thrown again",
            "try {\n  return await tasks.add_note({ id: 99, text: 'hi' });\n} catch (e) {\n  throw new Error('could not add the note: ' + e.message);\n}",
            Connector,
            "Error: could not add the note: task 99 does not exist; list_tasks gives the ids (line 4, column 48) (the failure came from tasks.add_note)".to_string(),
        ),
        (
            "a runaway loop",
            "let n = 0;\nwhile (true) n++;",
            Timeout,
            "Time limit: the code ran for more than 1500 ms and was stopped. Make fewer or smaller calls, avoid busy loops, and return sooner.".to_string(),
        ),
        (
            "a connector slower than its time limit",
            "return await slow.wait({ ms: 1000 })",
            Timeout,
            "Error: slow.wait did not answer within 200 ms".to_string(),
        ),
        (
            "everything held in memory",
            "const rows = [];\nwhile (true) rows.push('x'.repeat(1000000) + rows.length);",
            Memory,
            "Memory limit: the code used more than 32 MiB and was stopped. Work on smaller pieces of data, or ask the connectors to filter and page their results.".to_string(),
        ),
        (
            "a call per item past the call limit",
            "for (let i = 0; i < 1000; i++) await tasks.list_tasks();",
            Limit,
            "call limit: this execution reached its limit of 100 calls (connector calls and codemode.step; the runtime option max_calls). Make fewer calls: use a method that handles many items at once, filter on the server side, or split the work over several executions".to_string(),
        ),
        (
            "a huge argument",
            "return await tasks.add_note({ id: 1, text: 'x'.repeat(1100000) })",
            Limit,
            "the arguments of tasks.add_note is 1100018 characters serialised; one durable value may be at most 1000000. Store the data elsewhere (a file, a bucket, a table) and pass a small reference such as its path or id".to_string(),
        ),
        (
            "recursion without end",
            "const depth = (n) => depth(n + 1);\nreturn depth(0)",
            Limit,
            "Stack limit: RangeError: Maximum call stack size exceeded (line 1, column 31). The sandbox stack is 512 KiB; recursion this deep is not possible, use a loop instead.".to_string(),
        ),
        (
            "a value with a cycle passed to a connector",
            "const note = { id: 1, text: 'x' };\nnote.self = note;\nreturn await tasks.add_note(note)",
            Unserializable,
            "TypeError: args.self: a value that contains itself (a cycle: it is args) cannot be sent to a connector (tasks.add_note); pass a copy without the back reference (an id instead of the object, say) (line 3, column 29)".to_string(),
        ),
        (
            "a promise nothing settles",
            "await new Promise(() => {});",
            Stalled,
            "The code is waiting for a promise that nothing will ever settle (no host call is in flight; there are no timers in the sandbox). Await only connector and codemode calls, or promises built from them.".to_string(),
        ),
        (
            "code that does not parse",
            "const t = await tasks.list_tasks(;\nreturn t",
            Syntax,
            "SyntaxError: Unexpected token (line 1, column 34). Fix the code and send the whole program again, for example: async () => { const items = await tasks.list_tasks({}); return items.length; }".to_string(),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_wrong_programs_each_get_an_exact_error_and_code_that_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    let mut failures = Vec::new();
    for (what, code, want_code, want) in table() {
        let (error, got_code, _) = error_of(&rt, code).await;
        if error != want || got_code != want_code {
            failures.push(format!(
                "{what}\n  code: {code}\n  want {want_code}: {want}\n  got  {got_code}: {error}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_that_branches_on_a_value_that_changes_between_passes_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    // The counter runs again on every pass: 0 on the first, 1 on the replay.
    let code = "const n = await tasks.counter({});\nif (n % 2 === 0) await tasks.create_task({ title: 'a' });\nelse await tasks.list_tasks();\nreturn n";
    let paused = rt.call(code).await.unwrap();
    assert!(matches!(paused, Outcome::Paused { .. }), "{paused:?}");
    let outcome = rt.approve(paused.execution_id()).await.unwrap();
    let Outcome::Error {
        error,
        code,
        retryable,
        ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!((code, retryable), (ErrorCode::Diverged, false));
    assert!(error.starts_with("replay diverged at seq 1: the log recorded tasks.create_task({\"title\":\"a\"}) but this pass called tasks.list_tasks({})"), "{error}");
    assert!(
        error.contains(
            "wrap Date.now(), Math.random() and other nondeterminism in codemode.step(name, fn)"
        ),
        "{error}"
    );
    let stored = rt.execution(paused.execution_id()).await.unwrap().unwrap();
    assert_eq!(ErrorCode::of_execution(&stored), Some(ErrorCode::Diverged));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_action_reads_back_as_rejected_and_not_retryable() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    let paused = rt
        .call("return await tasks.create_task({ title: 'a' })")
        .await
        .unwrap();
    let Outcome::Paused { pending, .. } = &paused else {
        panic!("{paused:?}");
    };
    assert!(rt
        .reject(paused.execution_id(), pending[0].seq)
        .await
        .unwrap());
    let stored = rt.execution(paused.execution_id()).await.unwrap().unwrap();
    let code = ErrorCode::of_execution(&stored).unwrap();
    assert_eq!((code, code.retryable()), (ErrorCode::Rejected, false));
    assert_eq!(serde_json::to_value(code).unwrap(), json!("REJECTED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_is_an_error_outcome_coded_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    let running = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.call("await tasks.list_tasks();\nwhile (true) {}").await })
    };
    let id = loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Some(e) = rt.executions(None).await.unwrap().into_iter().next() {
            break e.id;
        }
    };
    rt.cancel(&id, Actor::cli()).await.unwrap();
    let outcome = running.await.unwrap().unwrap();
    let Outcome::Error {
        error,
        code,
        retryable,
        ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!((code, retryable), (ErrorCode::Cancelled, false), "{error}");
    assert_eq!(
        error,
        "the execution was cancelled by cli; what it applied stays (roll it back to undo it)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_to_error_reporting_stays_bounded_and_coded() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    // A method name of 10,000 characters is cut in the message.
    let (error, code, _) = error_of(&rt, "return await tasks['x'.repeat(10000)]({})").await;
    assert_eq!(code, ErrorCode::NotFound, "{error}");
    assert!(error.chars().count() < 600, "{} characters", error.len());
    assert!(
        error.starts_with(&format!(
            "TypeError: tasks.{}… is not a method of connector tasks",
            "x".repeat(100)
        )),
        "{error}"
    );
    // An error whose `message` getter throws is still reported, by its name.
    let (error, code, _) = error_of(
        &rt,
        "const e = new TypeError('hidden');\nObject.defineProperty(e, 'message', { get() { throw new Error('getter'); } });\nthrow e",
    )
    .await;
    assert_eq!(code, ErrorCode::Thrown, "{error}");
    assert!(error.starts_with("TypeError: "), "{error}");
    assert!(error.contains("(line 1, column"), "{error}");
    // A BigInt of a million digits is more than the engine makes; one that it makes is shown
    // cut, with its length.
    let (error, code, _) = error_of(&rt, "throw BigInt('7'.repeat(1000000))").await;
    assert_eq!(
        (error.as_str(), code),
        (
            "RangeError: BigInt is too large to allocate (line 1, column 17)",
            ErrorCode::Thrown
        )
    );
    let (error, code, _) = error_of(&rt, "throw BigInt('7'.repeat(100000))").await;
    assert_eq!(code, ErrorCode::Thrown);
    assert_eq!(
        error,
        format!(
            "Uncaught {}… (100001 characters in all) (throw an Error to get a line number)",
            "7".repeat(1000)
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_description_example_calls_a_method_of_the_loaded_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    let description = rt.tool().description;
    assert!(
        description.contains("e.g. await tasks.list_tasks({}); each takes one object"),
        "{description}"
    );
    assert!(!description.contains("github"), "{description}");
    assert!(description.contains("- calendar: unavailable, it failed to start (the server asked for sign-in); every call on it throws"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caught_error_s_stack_shows_only_the_model_s_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&dir);
    let code =
        "try {\n  await tasks.create_tasks({ title: 'x' });\n} catch (e) {\n  return e.stack;\n}";
    let outcome = rt.call(code).await.unwrap();
    let Outcome::Completed { result, .. } = outcome else {
        panic!("{outcome:?}");
    };
    let stack = result.as_str().unwrap_or_default();
    assert!(!stack.contains("sandbox.js"), "{stack}");
    assert!(stack.contains("code.js:2"), "{stack}");
}
