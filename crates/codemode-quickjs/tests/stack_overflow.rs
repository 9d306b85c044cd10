//! Recursion past the stack limit ends the pass with a message that says so, where (the line
//! and column in the model's code) and what to do instead, whatever the recursion goes
//! through: a plain call, a built-in that calls back, a getter, a Proxy trap, async calls.

mod common;

use common::{failure, run};

/// Each recursion, and the column of the call that recursed (all on line 1).
const RECURSIONS: [(&str, &str); 12] = [
    ("plain call", "async () => { function f() { return f() } return f() }"),
    ("toJSON in JSON.stringify", "async () => { const o = { toJSON() { return JSON.stringify(o) } }; return JSON.stringify(o) }"),
    ("toJSON in console.log", "async () => { const o = { toJSON() { console.log(o); return 1 } }; console.log(o); return 1 }"),
    ("toJSON in a host call", "async () => { const o = { toJSON() { return JSON.stringify([o]) } }; return await tasks.get(o) }"),
    ("getter", "async () => { const o = { get x() { return o.x } }; return o.x }"),
    ("Array.prototype.map", "async () => { function f(n) { return [n].map(f) } return f(1) }"),
    ("Proxy get trap", "async () => { const p = new Proxy({}, { get(t, k, r) { return r[k] } }); return p.x }"),
    ("Proxy apply trap", "async () => { const p = new Proxy(function () {}, { apply() { return p() } }); return p() }"),
    ("async function awaiting itself", "async () => { async function f() { return await f() } return await f() }"),
    ("async function returning itself", "async () => { async function f() { return f() } return await f() }"),
    ("promise callback", "async () => { await Promise.resolve().then(function g() { return g() }) }"),
    ("sort comparator", "async () => { [3, 2, 1].sort(function c(a, b) { return [a, b].sort(c)[0] }) }"),
];

#[tokio::test]
async fn every_recursion_ends_with_the_stack_limit_message() {
    for (name, code) in RECURSIONS {
        let message = failure(&run(code).await);
        assert!(
            message.starts_with("Stack limit: ") && message.contains("use a loop instead"),
            "{name}: {message}"
        );
        assert!(message.contains("(line 1, column "), "{name}: {message}");
        assert!(!message.contains("Uncaught"), "{name}: {message}");
    }
}

#[tokio::test]
async fn the_position_is_the_recursing_call_in_the_model_code() {
    let code = "async () => {\n  function walk(node) {\n    return walk(node);\n  }\n  return walk({});\n}";
    let message = failure(&run(code).await);
    assert!(message.contains("(line 3, column "), "{message}");
    // Through TypeScript too: the position is in the model's lines.
    let code = "async () => {\n  type N = { next?: N };\n  function walk(node: N): number {\n    return walk(node);\n  }\n  return walk({});\n}";
    let message = failure(&run(code).await);
    assert!(
        message.starts_with("Stack limit: ") && message.contains("(line 4, column "),
        "{message}"
    );
}
