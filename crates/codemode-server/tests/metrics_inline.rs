//! The metrics count a run as it happens: when `call` returns, its calls, its pass and a
//! sandbox limit that ended it are already in the text `/metrics` serves.

use codemode::{Runtime, RustConnector, RustTool};
use codemode_server::metrics::Metrics;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn runtime(dir: &std::path::Path) -> Runtime {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let options =
        codemode_quickjs::QuickJsOptions::default().with_wall_time(Duration::from_millis(200));
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(options));
    Runtime::builder(store, executor)
        .connector(
            RustConnector::new("probe")
                .tool(RustTool::new("read", |_args, _ctx| async { Ok(json!(1)) }).read_only())
                .tool(
                    RustTool::new("fail", |_args, _ctx| async {
                        Err(codemode::ToolError("no".into()))
                    })
                    .read_only(),
                ),
        )
        .build()
        .unwrap()
}

/// The value of the sample line `name` (with its labels), or 0 when it is absent.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0.0, |v| v.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_counted_by_the_time_call_returns() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let metrics = Metrics::start(&rt);
    rt.call("async () => { await probe.read({}); await probe.read({}); return 1 }")
        .await
        .unwrap();
    let text = metrics.render();
    let calls = r#"codemode_connector_calls_total{connector="probe",method="read",outcome="ok"}"#;
    assert_eq!(sample(&text, calls), 2.0, "{text}");
    assert_eq!(sample(&text, "codemode_executions_started_total"), 1.0);
    let passes = r#"codemode_pass_duration_seconds_count{status="completed"}"#;
    assert_eq!(sample(&text, passes), 1.0, "{text}");
    assert_eq!(sample(&text, "codemode_connector_calls_in_flight"), 0.0);

    // Each method's calls by outcome, and their durations, after more of them.
    rt.call("async () => { await probe.read({}); for (let i = 0; i < 3; i++) { try { await probe.fail({}); } catch (_) {} } return 1 }")
        .await
        .unwrap();
    let text = metrics.render();
    let read_ok = r#"codemode_connector_calls_total{connector="probe",method="read",outcome="ok"}"#;
    let fail_error =
        r#"codemode_connector_calls_total{connector="probe",method="fail",outcome="error"}"#;
    let fail_ok = r#"codemode_connector_calls_total{connector="probe",method="fail",outcome="ok"}"#;
    assert_eq!(sample(&text, read_ok), 3.0, "{text}");
    assert_eq!(sample(&text, fail_error), 3.0, "{text}");
    assert!(
        !text.contains(fail_ok),
        "an outcome never seen has no line: {text}"
    );
    let read_count =
        r#"codemode_connector_call_duration_seconds_count{connector="probe",method="read"}"#;
    let fail_count =
        r#"codemode_connector_call_duration_seconds_count{connector="probe",method="fail"}"#;
    assert_eq!(sample(&text, read_count), 3.0, "{text}");
    assert_eq!(sample(&text, fail_count), 3.0, "{text}");
    assert!(
        text.find(fail_error) < text.find(read_ok),
        "sorted by connector and method: {text}"
    );

    rt.call("async () => { while (true) {} }").await.unwrap();
    let text = metrics.render();
    let hits = r#"codemode_sandbox_limit_hits_total{limit="time"}"#;
    assert_eq!(sample(&text, hits), 1.0, "{text}");
    let errors = r#"codemode_pass_duration_seconds_count{status="error"}"#;
    assert_eq!(sample(&text, errors), 1.0, "{text}");
}

#[tokio::test]
async fn dropped_metrics_count_nothing_more_and_runs_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    drop(Metrics::start(&rt));
    let done = rt.call("async () => await probe.read({})").await.unwrap();
    assert!(
        matches!(done, codemode::Outcome::Completed { .. }),
        "{done:?}"
    );
}
