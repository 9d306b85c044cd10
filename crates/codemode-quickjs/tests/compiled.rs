//! Code run again on one executor (an approval's pass, a snippet run twice) comes from the
//! compiled-code cache and behaves exactly as the first time.

mod common;

use codemode::HostReply;
use codemode_quickjs::QuickJsExecutor;
use common::{failure, returned, run_with, TestHost};
use serde_json::json;

/// Runs `code` twice on one executor and returns both results' debug forms.
async fn twice(code: &str) -> (String, String) {
    let executor = QuickJsExecutor::default();
    let first = run_with(&executor, code, TestHost::echo()).await;
    let second = run_with(&executor, code, TestHost::echo()).await;
    (format!("{first:?}"), format!("{second:?}"))
}

#[tokio::test]
async fn a_second_pass_reports_the_same_values_logs_and_error_positions() {
    let cases = [
        "async () => { console.log('hi', 1); return await tasks.get({ id: 7 }) }",
        "const a = 1;\nconst b = null;\nreturn b.x;",
        "```ts\nconst o: any = null;\n\nconst v: number = o.x;\n```",
        "async () => {\n  const x = ;\n}",
        "async () => { throw new Error('boom') }",
    ];
    for code in cases {
        let (first, second) = twice(code).await;
        assert_eq!(first, second, "{code}");
    }
    let (ts, _) = twice("```ts\nconst o: any = null;\n\nconst v: number = o.x;\n```").await;
    assert!(ts.contains("line 4"), "{ts}");
}

#[tokio::test]
async fn a_cached_pass_starts_from_a_fresh_global_state() {
    let executor = QuickJsExecutor::default();
    let code = "async () => { globalThis.count = (globalThis.count ?? 0) + 1; return count }";
    for _ in 0..3 {
        let result = run_with(&executor, code, TestHost::echo()).await;
        assert_eq!(returned(&result), json!(1));
    }
}

#[tokio::test]
async fn a_snippet_run_again_takes_its_new_input() {
    let executor = QuickJsExecutor::default();
    let host = TestHost::new(|c| match c.method.as_str() {
        "run" => HostReply::RunCode {
            code: "return input.n * 2".into(),
            input: c.args["input"].clone(),
        },
        _ => HostReply::Value(json!(null)),
    });
    for n in [1, 2, 3] {
        let code = format!("async () => await codemode.run('double', {{ n: {n} }})");
        let result = run_with(&executor, &code, host.clone()).await;
        assert_eq!(returned(&result), json!(n * 2));
    }
    let bad = TestHost::new(|_| HostReply::RunCode {
        code: "return input.missing.field".into(),
        input: json!({}),
    });
    let code = "async () => await codemode.run('broken')";
    let first = failure(&run_with(&executor, code, bad.clone()).await);
    let second = failure(&run_with(&executor, code, bad).await);
    assert_eq!(first, second);
    assert!(first.contains("TypeError"), "{first}");
}
