//! OpenTelemetry traces of a real `codemode serve`: an in-test OTLP/HTTP receiver decodes
//! the protobuf it is sent and checks the spans of a run that pauses and is approved (one
//! trace, rooted at the request's `traceparent`, its parent chain intact across both
//! passes), a malformed `traceparent` ignored, a collector that never answers slowing no
//! run, and a bad `[telemetry]` key named.

mod common;

use axum::body::Bytes;
use axum::routing::post;
use common::{serve, BIN};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const ROOT: &str = "00f067aa0ba902b7";
const APPROVER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const APPROVER_SPAN: &str = "b7ad6b7169203331";

/// A received span, with its service name.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    span: Span,
}

impl Got {
    fn attr(&self, key: &str) -> Option<Value> {
        let kv = self.span.attributes.iter().find(|kv| kv.key == key)?;
        Some(match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => json!(s),
            Any::BoolValue(b) => json!(b),
            Any::IntValue(i) => json!(i),
            Any::DoubleValue(d) => json!(d),
            other => json!(format!("{other:?}")),
        })
    }

    fn trace(&self) -> String {
        hex(&self.span.trace_id)
    }

    fn id(&self) -> String {
        hex(&self.span.span_id)
    }

    fn parent(&self) -> String {
        hex(&self.span.parent_span_id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP receiver on a free port: `POST /v1/traces` with a protobuf body.
async fn receiver() -> (String, Arc<Mutex<Vec<Got>>>) {
    let got: Arc<Mutex<Vec<Got>>> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let sink = sink.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                let mut spans = sink.lock().unwrap();
                for rs in request.resource_spans {
                    let service = rs
                        .resource
                        .iter()
                        .flat_map(|r| r.attributes.iter())
                        .find(|kv| kv.key == "service.name")
                        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                            Any::StringValue(s) => Some(s.clone()),
                            _ => None,
                        })
                        .unwrap_or_default();
                    for ss in rs.scope_spans {
                        for span in ss.spans {
                            spans.push(Got {
                                service: service.clone(),
                                span,
                            });
                        }
                    }
                }
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, got)
}

/// POSTs `body` with an optional `traceparent` header.
async fn post_traced(url: String, body: Value, traceparent: Option<&str>) -> Value {
    let c = common::client();
    let mut request = c.post(url).json(&body);
    if let Some(tp) = traceparent {
        request = request.header("traceparent", tp);
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.unwrap()
}

/// Waits up to 20 s for spans matching `done`.
async fn until(got: &Arc<Mutex<Vec<Got>>>, done: impl Fn(&[Got]) -> bool) -> Vec<Got> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let spans = got.lock().unwrap().clone();
        if done(&spans) || Instant::now() > deadline {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn of_execution<'a>(spans: &'a [Got], name: &str, id: &str) -> Vec<&'a Got> {
    spans
        .iter()
        .filter(|s| s.span.name == name && s.attr("codemode.execution_id") == Some(json!(id)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_and_approved_run_is_one_trace_rooted_at_its_traceparent() {
    let (endpoint, got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "codemode-traces-test"),
        ],
    );
    let base = server.base.clone();

    // Pass 1: a live read, then a write that waits for approval.
    let code = "await tasks.list_tasks({}); const t = await tasks.create_task({ title: 'secret title' }); return t.title;";
    let root = format!("00-{TRACE}-{ROOT}-01");
    let paused = post_traced(
        format!("{base}/api/run"),
        json!({ "code": code }),
        Some(&root),
    )
    .await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["executionId"].as_str().unwrap().to_string();

    // Pass 2, started by an approval that belongs to another trace.
    let approver = format!("00-{APPROVER_TRACE}-{APPROVER_SPAN}-01");
    let done = post_traced(
        format!("{base}/api/executions/{id}/approve"),
        json!({}),
        Some(&approver),
    )
    .await;
    assert_eq!(done["status"], "completed", "{done}");

    // A malformed traceparent is ignored: the run works and starts a trace of its own.
    let other = post_traced(
        format!("{base}/api/run"),
        json!({ "code": "return 1" }),
        Some("00-not-a-trace-01"),
    )
    .await;
    assert_eq!(other["status"], "completed", "{other}");
    let other_id = other["executionId"].as_str().unwrap().to_string();

    // Every span asserted on below: each is exported when it ends, and a decision's span or a
    // request's can end after the pass spans of its request.
    let spans = until(&got, |s| {
        of_execution(s, "codemode.pass", &id).len() == 2
            && of_execution(s, "codemode.pass", &other_id).len() == 1
            && of_execution(s, "codemode.decision", &id).len() == 1
            && s.iter().filter(|g| g.span.name == "codemode.call").count() >= 4
            && s.iter().filter(|g| g.span.name == "codemode.http").count() >= 3
    })
    .await;
    let names: Vec<&str> = spans.iter().map(|s| s.span.name.as_str()).collect();
    assert!(
        spans.iter().all(|s| s.service == "codemode-traces-test"),
        "{names:?}"
    );

    // The run request's span continues the incoming traceparent.
    let run_http: Vec<&Got> = spans
        .iter()
        .filter(|s| s.span.name == "codemode.http" && s.parent() == ROOT)
        .collect();
    assert_eq!(run_http.len(), 1, "{names:?}");
    let run_http = run_http[0];
    assert_eq!(run_http.trace(), TRACE);
    assert_eq!(run_http.attr("url.path"), Some(json!("/api/run")));

    let passes = of_execution(&spans, "codemode.pass", &id);
    let first = passes
        .iter()
        .find(|p| p.attr("codemode.pass") == Some(json!(1)))
        .unwrap_or_else(|| panic!("pass 1 in {passes:#?}"));
    let second = passes
        .iter()
        .find(|p| p.attr("codemode.pass") == Some(json!(2)))
        .expect("pass 2");
    assert_eq!(first.trace(), TRACE);
    assert_eq!(
        first.parent(),
        run_http.id(),
        "pass 1 under the run request"
    );
    assert_eq!(first.attr("codemode.status"), Some(json!("paused")));
    assert_eq!(first.attr("codemode.runtime"), Some(json!("default")));

    // The approval continues the execution's trace (linking the approver's own) ...
    let decisions = of_execution(&spans, "codemode.decision", &id);
    assert_eq!(decisions.len(), 1, "{names:?}");
    let decision = decisions[0];
    assert_eq!(decision.trace(), TRACE);
    assert_eq!(decision.parent(), first.id(), "the decision under pass 1");
    assert_eq!(decision.attr("codemode.decision"), Some(json!("approve")));
    assert!(
        decision
            .span
            .links
            .iter()
            .any(|l| hex(&l.trace_id) == APPROVER_TRACE),
        "the approval request's trace is linked: {:?}",
        decision.span.links
    );
    // ... and pass 2 is its child: root -> request -> pass 1 -> decision -> pass 2.
    assert_eq!(second.trace(), TRACE);
    assert_eq!(second.parent(), decision.id(), "pass 2 under the decision");
    assert_eq!(second.attr("codemode.status"), Some(json!("completed")));

    // Calls: live and replayed, each under its pass, with no argument values.
    let calls: Vec<&Got> = spans
        .iter()
        .filter(|s| s.span.name == "codemode.call" && s.trace() == TRACE)
        .collect();
    let call = |pass: &Got, seq: i64| {
        calls
            .iter()
            .find(|c| c.parent() == pass.id() && c.attr("codemode.seq") == Some(json!(seq)))
            .unwrap_or_else(|| panic!("call {seq} under {}: {calls:#?}", pass.span.name))
            .to_owned()
    };
    let read = call(first, 0);
    assert_eq!(read.attr("codemode.connector"), Some(json!("tasks")));
    assert_eq!(read.attr("codemode.method"), Some(json!("list_tasks")));
    assert_eq!(read.attr("codemode.replayed"), Some(json!(false)));
    assert_eq!(read.attr("codemode.outcome"), Some(json!("ok")));
    assert!(read.attr("codemode.duration_ms").is_some());
    let write = call(first, 1);
    assert_eq!(write.attr("codemode.method"), Some(json!("create_task")));
    assert_eq!(write.attr("codemode.outcome"), Some(json!("pending")));
    let replayed = call(second, 0);
    assert_eq!(replayed.attr("codemode.replayed"), Some(json!(true)));
    let applied = call(second, 1);
    assert_eq!(applied.attr("codemode.replayed"), Some(json!(false)));
    assert_eq!(applied.attr("codemode.outcome"), Some(json!("ok")));
    for c in &calls {
        assert!(c.attr("codemode.args").is_none(), "{c:?}");
    }
    let encoded = format!("{spans:?}");
    assert!(!encoded.contains("secret title"), "argument values leaked");

    // Store commits, under the passes and the decision.
    let commits: Vec<&Got> = spans
        .iter()
        .filter(|s| s.span.name == "codemode.store.commit" && s.trace() == TRACE)
        .collect();
    for parent in [first, second, decision] {
        assert!(
            commits.iter().any(|c| c.parent() == parent.id()),
            "a commit under {}: {commits:#?}",
            parent.span.name
        );
    }

    // The malformed traceparent: its own trace, whose request span has no parent.
    let lone = of_execution(&spans, "codemode.pass", &other_id)[0];
    assert_ne!(lone.trace(), TRACE);
    let lone_http = spans
        .iter()
        .find(|s| s.id() == lone.parent())
        .expect("the request span of the malformed run");
    assert_eq!(lone_http.span.name, "codemode.http");
    assert!(lone_http.span.parent_span_id.is_empty());

    // /metrics: the commit latency histogram and the exported spans.
    let metrics = common::metrics_text(&common::client(), &base).await;
    let value = |name: &str| -> f64 {
        common::sample(&metrics, name).unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    assert!(value("codemode_store_commit_duration_seconds_count") >= 3.0);
    assert!(value("codemode_trace_spans_exported_total") > 0.0);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_slows_no_run_and_drops_are_counted() {
    // Accepts connections and never answers.
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = blackhole.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in blackhole.incoming().take(64) {
            open.push(stream);
        }
    });
    drop(held);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("codemode.toml");
    std::fs::write(
        &config,
        format!("[telemetry]\nendpoint = \"http://127.0.0.1:{port}\"\nmax_queue = 8\n"),
    )
    .unwrap();
    let server = serve(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let base = server.base.clone();
    let client = common::client();
    let dropped_now = || async {
        let metrics = common::metrics_text(&client, &base).await;
        let dropped = common::sample(&metrics, "codemode_trace_spans_dropped_total")
            .expect("the dropped spans counter");
        (dropped, metrics)
    };
    // Runs go on until spans are dropped: the exporter sends its first batch half a second
    // after the first span and then hangs on the collector, so the queue of 8 fills only with
    // the runs after that (however fast the machine makes the first ones).
    let mut slowest = Duration::ZERO;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0;
    let (dropped, metrics) = loop {
        let started = Instant::now();
        let out = post_traced(
            format!("{base}/api/run"),
            json!({ "code": format!("await tasks.list_tasks({{}}); return {i}") }),
            None,
        )
        .await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(out["status"], "completed", "{out}");
        i += 1;
        if i % 10 == 0 {
            let (dropped, metrics) = dropped_now().await;
            if dropped > 0.0 || Instant::now() > deadline {
                break (dropped, metrics);
            }
        }
    };
    assert!(
        slowest < Duration::from_secs(2),
        "a run took {slowest:?} with a collector that never answers"
    );
    assert!(dropped > 0.0, "{metrics}");
    drop(server);
}

/// Starts `serve` in `dir` with `config` (when given) and `env`; it must fail: its stderr.
fn serve_fails(dir: &Path, config: Option<&Path>, env: &[(&str, &str)]) -> String {
    let mut cmd = std::process::Command::new(BIN);
    cmd.current_dir(dir);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    let out = cmd
        .args(["serve", "--listen", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_telemetry_setting_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("codemode.toml");
    std::fs::write(&config, "[telemetry]\nendpoint = \"collector:4318\"\n").unwrap();
    let stderr = serve_fails(dir.path(), Some(&config), &[]);
    assert!(stderr.contains("telemetry.endpoint"), "{stderr}");

    std::fs::write(&config, "[telemetry]\nendpont = \"http://x:4318\"\n").unwrap();
    let stderr = serve_fails(dir.path(), Some(&config), &[]);
    assert!(stderr.contains("endpont"), "{stderr}");

    let stderr = serve_fails(
        dir.path(),
        None,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")],
    );
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{stderr}");
}

/// Calls the `codemode` tool over Streamable HTTP in `session` with `code`, a `traceparent`
/// header and a `traceparent` in the request's `_meta` (either may be absent); the result.
async fn mcp_call(
    mcp: &str,
    session: &str,
    id: u64,
    code: &str,
    header: Option<&str>,
    meta: Option<&str>,
) -> Value {
    let mut params = json!({ "name": "codemode", "arguments": { "code": code } });
    if let Some(tp) = meta {
        params["_meta"] = json!({ "traceparent": tp });
    }
    let mut request = common::client()
        .post(mcp)
        .header("accept", common::MCP_ACCEPT)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    if let Some(tp) = header {
        request = request.header("traceparent", tp);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_call_continues_its_traceparent_from_meta_or_header() {
    let (endpoint, got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    let mcp = format!("{}/mcp", server.base);
    let c = common::client();
    let session = common::mcp_session(&c, &mcp, "traces-test").await;

    let by_meta = format!("00-{TRACE}-{ROOT}-01");
    let by_header = format!("00-{APPROVER_TRACE}-{APPROVER_SPAN}-01");
    let a = mcp_call(&mcp, &session, 2, "return 'meta'", None, Some(&by_meta)).await;
    assert_eq!(a["result"]["isError"], json!(false), "{a}");
    let b = mcp_call(&mcp, &session, 3, "return 'header'", Some(&by_header), None).await;
    assert_eq!(b["result"]["isError"], json!(false), "{b}");

    let spans = until(&got, |s| {
        s.iter().filter(|g| g.span.name == "codemode.pass").count() >= 2
    })
    .await;
    for (trace, root) in [(TRACE, ROOT), (APPROVER_TRACE, APPROVER_SPAN)] {
        let request = spans
            .iter()
            .find(|s| s.span.name == "codemode.request" && s.parent() == root)
            .unwrap_or_else(|| panic!("an MCP request span under {root}: {spans:#?}"));
        assert_eq!(request.trace(), trace);
        assert_eq!(request.attr("codemode.request"), Some(json!("mcp")));
        let pass = spans
            .iter()
            .find(|s| s.span.name == "codemode.pass" && s.parent() == request.id())
            .unwrap_or_else(|| panic!("a pass under the MCP request: {spans:#?}"));
        assert_eq!(pass.trace(), trace);
    }
    drop(server);
}
