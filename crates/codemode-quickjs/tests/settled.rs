//! Once a pass has settled (returned, failed, paused), nothing it left behind makes a host
//! call or logs a line: garbage-collection callbacks (`FinalizationRegistry`), whose timing a
//! replay cannot see, never run at all, and `WeakRef` never lets a target go.

mod common;

use codemode::{HostReply, PassEnd};
use codemode_quickjs::QuickJsExecutor;
use common::{failure, returned, run, run_with, TestHost};
use serde_json::json;

/// Registers cleanup callbacks that call a connector and log, then makes garbage, enough for
/// several collections (`gc` is not exposed).
const REGISTER_AND_CHURN: &str = r#"
    const registry = new FinalizationRegistry((held) => { tasks.get({ late: held }); console.log("late", held); });
    for (let i = 0; i < 2000; i++) registry.register({ i }, i);
    const refs = [];
    for (let i = 0; i < 100; i++) refs.push(new WeakRef({ i }));
    let junk = [];
    for (let i = 0; i < 300000; i++) { junk.push({ i, s: "x" + i }); if (junk.length > 10000) junk = []; }
"#;

fn late_calls(host: &TestHost) -> usize {
    host.calls()
        .iter()
        .filter(|c| c.args.get("late").is_some())
        .count()
}

#[tokio::test]
async fn cleanup_callbacks_never_call_the_host() {
    let executor = QuickJsExecutor::default();
    let cases = [
        // Returned, with a call awaited after the garbage.
        format!("async () => {{ {REGISTER_AND_CHURN} await tasks.list_tasks(); return refs.filter(r => r.deref() !== undefined).length; }}"),
        // Returned while a call is in flight; its continuation makes more garbage.
        format!("async () => {{ {REGISTER_AND_CHURN} tasks.list_tasks().then(() => {{ let j = []; for (let i = 0; i < 300000; i++) {{ j.push({{ i }}); if (j.length > 10000) j = []; }} }}); return 100; }}"),
        // Returned at once, the collections still owed.
        format!("async () => {{ {REGISTER_AND_CHURN} return 100; }}"),
    ];
    for code in &cases {
        let host = TestHost::echo();
        let result = run_with(&executor, code, host.clone()).await;
        assert_eq!(returned(&result), json!(100), "{code}");
        assert_eq!(late_calls(&host), 0, "{code}");
        assert!(result.logs.is_empty(), "{code}: {:?}", result.logs);
        // The next pass in the same runtime sees nothing of them either.
        let next = run_with(&executor, "async () => 1", host.clone()).await;
        assert_eq!(returned(&next), json!(1));
        assert_eq!(late_calls(&host), 0, "{code}");
    }
}

#[tokio::test]
async fn a_paused_or_failed_pass_leaves_no_callback_behind() {
    let executor = QuickJsExecutor::default();
    // `create_task` pauses the pass (as a call waiting for approval does).
    let host = TestHost::new(|c| {
        if c.method == "create_task" {
            HostReply::Abort
        } else {
            HostReply::Value(json!({}))
        }
    });
    let paused = format!(
        "async () => {{ {REGISTER_AND_CHURN} tasks.list_tasks().then(() => {{ let j = []; for (let i = 0; i < 300000; i++) {{ j.push({{ i }}); if (j.length > 10000) j = []; }} }}); await tasks.create_task({{}}); return 1; }}"
    );
    let result = run_with(&executor, &paused, host.clone()).await;
    assert_eq!(result.end, PassEnd::Aborted);
    let failed = format!("async () => {{ {REGISTER_AND_CHURN} throw new Error('stop'); }}");
    let result = run_with(&executor, &failed, host.clone()).await;
    assert!(failure(&result).contains("stop"));
    assert_eq!(late_calls(&host), 0);
    assert!(result.logs.is_empty(), "{:?}", result.logs);
}

#[tokio::test]
async fn weak_refs_and_registries_keep_their_interface() {
    let code = r#"async () => {
        const target = { a: 1 };
        const ref = new WeakRef(target);
        const registry = new FinalizationRegistry(() => {});
        const token = {};
        const errors = [];
        for (const f of [() => new WeakRef(1), () => WeakRef({}), () => new FinalizationRegistry(1),
                         () => registry.register(1, 2), () => registry.register(target, target),
                         () => registry.unregister(1), () => WeakRef.prototype.deref.call({})]) {
            try { f(); errors.push("none"); } catch (e) { errors.push(e.constructor.name); }
        }
        return {
            same: ref.deref() === target,
            tag: Object.prototype.toString.call(ref) + Object.prototype.toString.call(registry),
            registered: typeof registry.register(target, "held", token),
            unregistered: [registry.unregister(token), registry.unregister(token)],
            symbol: new WeakRef(Symbol("s")).deref().toString(),
            errors,
            names: [WeakRef.name, FinalizationRegistry.name, typeof WeakRef.prototype.deref],
        };
    }"#;
    assert_eq!(
        returned(&run(code).await),
        json!({
            "same": true,
            "tag": "[object WeakRef][object FinalizationRegistry]",
            "registered": "undefined",
            "unregistered": [true, false],
            "symbol": "Symbol(s)",
            "errors": ["TypeError", "TypeError", "TypeError", "TypeError", "TypeError", "TypeError", "TypeError"],
            "names": ["WeakRef", "FinalizationRegistry", "function"],
        })
    );
}
