//! The glue's functions and the originals of guarded built-ins stay out of the model's reach:
//! no stack-walking trick hands them out.

mod common;

use common::{returned, run};
use serde_json::json;

#[tokio::test]
async fn prepare_stack_trace_frames_give_no_functions() {
    let code = r#"async () => {
        const seen = [];
        Error.prepareStackTrace = (error, frames) => {
            for (const frame of frames) seen.push(typeof frame.getFunction());
            return frames.map(f => f.getFunctionName()).join(",");
        };
        const probe = () => new Error("probe").stack;
        const direct = probe();
        let viaBuiltin = "";
        try {
            Array.prototype.reverse.call({ get length() { throw new Error("inside"); } });
        } catch (e) { viaBuiltin = e.stack; }
        let viaGlue = "";
        try { console.log({ toJSON() { throw new Error("in glue"); } }); } catch (e) { viaGlue = e.stack; }
        let viaStep = "";
        await codemode.step("s", () => { viaStep = new Error("step").stack; return 1; }).catch(() => {});
        Error.prepareStackTrace = undefined;
        return { functions: [...new Set(seen)], frames: seen.length > 3, direct: typeof direct, builtin: typeof viaBuiltin };
    }"#;
    let value = returned(&run(code).await);
    assert_eq!(
        value,
        json!({"functions": ["undefined"], "frames": true, "direct": "string", "builtin": "string"})
    );
}

#[tokio::test]
async fn caller_and_callee_reach_nothing() {
    let code = r#"async () => {
        const attempt = (f) => { try { const v = f(); return v === null || v === undefined ? String(v) : typeof v; } catch (e) { return e.constructor.name; } };
        const sloppy = Function("return function probe() { return probe.caller; }")();
        const sloppyArgs = Function("return function probe() { return arguments.callee.caller; }")();
        const results = {
            strictCaller: attempt(() => (function f() { return f.caller; })()),
            protoCaller: attempt(() => Function.prototype.caller),
            protoArguments: attempt(() => Function.prototype.arguments),
            sloppyCaller: attempt(() => sloppy()),
            sloppyCallee: attempt(() => sloppyArgs()),
            sortComparatorCaller: attempt(() => { let c; [2, 1].sort(Function("return function cmp(a, b) { cmp.seen = cmp.caller; return a - b; }")()); return c; }),
        };
        let fromStep;
        await codemode.step("s", Function("return function step() { return typeof step.caller; }")()).then(v => fromStep = v, e => fromStep = e.constructor.name);
        results.stepCaller = fromStep;
        let fromSort;
        const cmp = Function("return function cmp(a, b) { fromSortSeen = cmp.caller; return a - b; }")();
        globalThis.fromSortSeen = "unset";
        try { [2, 1].sort(cmp); fromSort = fromSortSeen === null ? "null" : typeof fromSortSeen; } catch (e) { fromSort = e.constructor.name; }
        results.sortCaller = fromSort;
        return results;
    }"#;
    let value = returned(&run(code).await);
    println!("{value}");
    for (name, result) in value.as_object().unwrap() {
        let result = result.as_str().unwrap();
        assert!(
            ["null", "undefined", "TypeError"].contains(&result),
            "{name} reached {result}"
        );
    }
}
