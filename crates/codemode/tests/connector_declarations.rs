//! Connector-level declarations: positional arguments and hand-written TypeScript types.

use codemode::{Outcome, Runtime, RustConnector, RustTool};
use serde_json::{json, Value};
use std::sync::Arc;

fn state(positional: bool) -> RustConnector {
    // `options` comes first in the schema, but required parameters come first in calls.
    let read = RustTool::new("readFile", |args, _ctx| async move { Ok(args) })
        .input_schema(json!({
            "type": "object",
            "properties": {
                "options": { "type": "object", "properties": { "encoding": { "type": "string" } } },
                "path": { "type": "string" }
            },
            "required": ["path"]
        }))
        .read_only();
    let list = RustTool::new("list", |args, _ctx| async move { Ok(args) }).read_only();
    let connector = RustConnector::new("state").tool(read).tool(list);
    if positional {
        connector.positional_args()
    } else {
        connector
    }
}

fn runtime(dir: &std::path::Path, connector: RustConnector) -> Runtime {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    Runtime::builder(store, executor)
        .connector(connector)
        .build()
        .unwrap()
}

async fn run(runtime: &Runtime, code: &str) -> Outcome {
    runtime.call(code).await.unwrap()
}

fn result(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Completed { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn positional_calls_become_the_object_the_log_records() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = run_positional(&dir);
    let outcome = run(
        &runtime,
        "async () => [await state.readFile('/a'), await state.readFile('/b', { encoding: 'utf8' }), await state.list({ any: 1 })]",
    )
    .await;
    let id = outcome.execution_id().to_string();
    assert_eq!(
        result(outcome),
        json!([
            { "path": "/a" },
            { "path": "/b", "options": { "encoding": "utf8" } },
            { "any": 1 }
        ])
    );
    let execution = runtime.execution(&id).await.unwrap().unwrap();
    let args: Vec<Value> = execution.log.iter().map(|e| e.args.clone()).collect();
    assert_eq!(args[0], json!({ "path": "/a" }));
    assert_eq!(
        args[1],
        json!({ "path": "/b", "options": { "encoding": "utf8" } })
    );
}

fn run_positional(dir: &tempfile::TempDir) -> Runtime {
    runtime(dir.path(), state(true))
}

#[tokio::test(flavor = "current_thread")]
async fn a_wrong_argument_count_names_the_signature() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = run_positional(&dir);
    for code in [
        "async () => state.readFile()",
        "async () => state.readFile('/a', {}, 3)",
    ] {
        let Outcome::Error { error, .. } = run(&runtime, code).await else {
            panic!("{code} was accepted");
        };
        assert!(
            error.contains("state.readFile(path, options?) takes 1 to 2 argument(s)"),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn declarations_show_parameters_in_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let positional = run_positional(&dir).types();
    assert!(
        positional.contains("readFile(path: string, options?: { encoding?: string })"),
        "{positional}"
    );
    assert!(!positional.contains("ReadFileInput"), "{positional}");
    // A method whose input declares no properties still takes its one object.
    assert!(
        positional.contains("list(input?: ListInput)"),
        "{positional}"
    );

    let other = tempfile::tempdir().unwrap();
    let objects = runtime(other.path(), state(false)).types();
    assert!(
        objects.contains("readFile(input: ReadFileInput)"),
        "{objects}"
    );
    // Object form: a string is not the input object.
    let runtime = runtime(tempfile::tempdir().unwrap().path(), state(false));
    let Outcome::Error { error, .. } = run(&runtime, "async () => state.readFile('/a')").await
    else {
        panic!("a positional call to an object connector was accepted");
    };
    assert!(!error.is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn hand_written_types_replace_the_generated_ones() {
    let dir = tempfile::tempdir().unwrap();
    let text = "/** The shared state. */\ndeclare const state: {\n  readFile(path: string): Promise<string>;\n  list(): Promise<string[]>;\n};\n";
    let runtime = runtime(dir.path(), state(true).types(text));
    assert!(runtime.types().contains(text), "{}", runtime.types());
    assert!(!runtime.types().contains("options?: { encoding"));
    let described = runtime.describe("state").await.unwrap().unwrap();
    assert_eq!(described.types, text);
    assert!(runtime.tool().description.contains(text));
}

#[tokio::test(flavor = "current_thread")]
async fn the_tool_description_can_be_replaced_with_placeholders() {
    use codemode::runtime::{ToolOptions, TOOL_EXAMPLE};
    let dir = tempfile::tempdir().unwrap();
    let runtime = run_positional(&dir);
    let template = "Write code.\n{{types}}\nFor example:\n{{ example }}\n";
    let tool = runtime
        .tool_with(ToolOptions {
            description: Some(template.into()),
            ..ToolOptions::default()
        })
        .unwrap();
    assert_eq!(
        tool.description,
        format!(
            "Write code.\n{}\nFor example:\n{TOOL_EXAMPLE}\n",
            runtime.types()
        )
    );
    assert_eq!(tool.name, "codemode");
    let refused = runtime.tool_with(ToolOptions {
        description: Some("Use {{tools}} here".into()),
        ..ToolOptions::default()
    });
    let Err(codemode::RuntimeError::InvalidConfig(message)) = refused else {
        panic!("an unknown placeholder was accepted: {refused:?}");
    };
    assert!(message.contains("{{tools}}"), "{message}");
    assert!(message.contains("{{types}} and {{example}}"), "{message}");
}
