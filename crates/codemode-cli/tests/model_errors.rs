//! What the model sees names the fix, through the real binary: a name that is not a method of
//! a connector, a global close to a connector's name, a connector that failed to start (a
//! command that does not exist, and a Code Mode server wrapped as an MCP connector, refused
//! as a code tool) and a namespace's own properties, each with its exact text.

mod common;

use common::{cli, BIN};
use serde_json::Value;
use std::path::Path;

/// The connectors: the demo, one whose command does not exist, and `codemode serve --stdio`
/// itself (from a directory with no configuration, so it does not start itself again).
fn configure(dir: &Path) {
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let config = format!(
        "demo = true\n\
         [connectors.dead]\ntype = \"mcp\"\ncommand = \"/nonexistent/mcp-server\"\n\
         [connectors.inner]\ntype = \"mcp\"\ncommand = {BIN:?}\n\
         args = [\"--store\", \"sqlite:{}\", \"serve\", \"--stdio\"]\ncwd = {:?}\n",
        inner.join("inner.db").display(),
        inner.display().to_string(),
    );
    std::fs::write(dir.join("codemode.toml"), config).unwrap();
}

/// Runs `code` and returns its error (or its result, as JSON text).
fn run(dir: &Path, code: &str) -> String {
    let out = cli(dir, &dir.join("c.db"), &["--json", "run", "-e", code]);
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{code}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    match outcome["error"].as_str() {
        Some(error) => error.to_string(),
        None => outcome["result"].to_string(),
    }
}

const SEARCH: &str = "codemode.search finds tools by what they do";
const GLOBALS: &str = "the only globals available in the sandbox are: tasks, state, dead, inner, codemode, console (and the standard JavaScript built-ins such as JSON, Math, Date, Promise); there is no fetch, require, process or file system";
const DEAD: &str = "connectors.dead: cannot start MCP server /nonexistent/mcp-server: MCP connector `dead`: cannot start `/nonexistent/mcp-server`: No such file or directory (os error 2)";

#[test]
fn each_mistake_gets_an_error_that_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    configure(dir.path());
    let inner = dir.path().join("inner");
    let inner_reason = format!(
        "connectors.inner: cannot start MCP server {BIN} --store sqlite:{} serve --stdio: MCP connector `inner`: every tool it lists (\"codemode\") is left out: it takes code to run (named like a code runner, or its input has a string `code` or `script`), and exposing it would let code run code, past the log and the approvals (a Code Mode server wrapped as a connector would run itself); connect to the servers behind it instead; if this server is safe to run code in, set allow_code_tools = true in [connectors.inner]",
        inner.join("inner.db").display()
    );
    let table: Vec<(&str, &str, String)> = vec![
        (
            "a method one letter off",
            "return await tasks.create_tasks({ title: 'x' })",
            format!("TypeError: tasks.create_tasks is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH}; codemode.describe(\"tasks.create_task\") shows its input) (line 1, column 19)"),
        ),
        (
            "a method in another case",
            "return await tasks.createTask({ title: 'x' })",
            format!("TypeError: tasks.createTask is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH}; codemode.describe(\"tasks.create_task\") shows its input) (line 1, column 19)"),
        ),
        (
            "a method nothing is close to",
            "return await tasks.frobnicate()",
            format!("TypeError: tasks.frobnicate is not a method of connector tasks (its 4 methods: list_tasks, create_task, complete_task, add_note); {SEARCH}, codemode.describe(\"tasks\") lists their inputs (line 1, column 19)"),
        ),
        (
            "a method kept in a variable first",
            "const make = tasks.create_tsk;\nreturn await make({ title: 'x' })",
            format!("TypeError: tasks.create_tsk is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH}; codemode.describe(\"tasks.create_task\") shows its input) (line 2, column 14)"),
        ),
        (
            "a connector one letter off",
            "return await task.list_tasks()",
            format!("ReferenceError: task is not defined (line 1, column 14); did you mean tasks? {GLOBALS}"),
        ),
        (
            "a global close to nothing",
            "return await github.list()",
            format!("ReferenceError: github is not defined (line 1, column 14); {GLOBALS}"),
        ),
        (
            "a connector that failed to start",
            "return await dead.list_things()",
            format!("Error: connector dead failed to start: {DEAD} (line 1, column 18)"),
        ),
        (
            "a Code Mode server wrapped as a connector",
            "return await inner.codemode({ code: 'async () => 1' })",
            format!("Error: connector inner failed to start: {inner_reason} (line 1, column 19)"),
        ),
        (
            "a namespace's property that is not a method, called",
            "return tasks.name()",
            format!("TypeError: tasks.name is not a method of connector tasks (its 4 methods: list_tasks, create_task, complete_task, add_note); {SEARCH}, codemode.describe(\"tasks\") lists their inputs (line 1, column 13)"),
        ),
        (
            "a method that may not exist, tested first (every name reads as a function, as in the reference)",
            "return [typeof tasks.create_tasks, typeof dead.list_things, 'create_tasks' in tasks]",
            r#"["function","function",false]"#.to_string(),
        ),
        (
            "a namespace as a value: awaited, shown, probed",
            "const t = await tasks; return [t === tasks, typeof tasks.create_task, Object.keys(tasks).length, 'create_tasks' in tasks, 'create_task' in tasks, String(tasks), JSON.stringify(tasks) === '{}', tasks.constructor === Object, typeof tasks[Symbol.toPrimitive], Object.keys(dead).length]",
            r#"[true,"function",4,false,true,"[object Object]",true,true,"undefined",0]"#.to_string(),
        ),
    ];
    let mut wrong = Vec::new();
    for (what, code, expected) in &table {
        let got = run(dir.path(), code);
        if got != *expected {
            wrong.push(format!(
                "{what}:\n  code:     {code}\n  expected: {expected}\n  got:      {got}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
