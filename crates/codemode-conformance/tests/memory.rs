//! Host memory per execution is bounded: a run that reads 300 results of ~766 KB (230 MB
//! in all, over the 64 MiB log limit) ends with an error naming the log limit, and the
//! process's resident memory returns near where it started. Alone in its binary, as RSS is
//! per process.

use codemode::{CallContext, Outcome, Runtime, RustConnector, RustTool, ToolError};
use serde_json::{json, Value};
use std::sync::Arc;

/// Resident set size of this process, in bytes (Linux `/proc/self/statm`).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm resident pages");
    pages * 4096
}

/// A page of 4,000 records, about 766 KB of JSON: the shape of a real API listing.
fn page(n: u64) -> Value {
    let items: Vec<Value> = (0..4_000)
        .map(|i| {
            json!({
                "id": n * 10_000 + i,
                "title": format!("record {i} of page {n}"),
                "body": "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua",
                "tags": ["alpha", "beta"],
            })
        })
        .collect();
    Value::Array(items)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_large_reads_end_on_the_log_limit_and_memory_returns() {
    let size = serde_json::to_string(&page(0)).unwrap().len();
    assert!((700_000..850_000).contains(&size), "a page is {size} bytes");
    let api = RustConnector::new("api").tool(
        RustTool::new("list", |args: Value, _ctx: CallContext| async move {
            Ok::<Value, ToolError>(page(args["page"].as_u64().unwrap_or(0)))
        })
        .description("One page of records.")
        .read_only(),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("m.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let runtime = Runtime::builder(store, executor)
        .connector(api)
        .build()
        .unwrap();
    // Warm up: the sandbox, the store and the allocator's arenas exist before the baseline.
    let warm = "async () => (await api.list({ page: 0 })).length";
    let outcome = runtime.call(warm).await.unwrap();
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    let baseline = rss_bytes();

    let code = "async () => { let n = 0; for (let i = 0; i < 300; i++) { n += (await api.list({ page: i })).length; } return n; }";
    let outcome = runtime.call(code).await.unwrap();
    let after = rss_bytes();
    let peak = peak_rss();
    let Outcome::Error { error, .. } = &outcome else {
        panic!("300 large reads must end on the log limit: {outcome:?}")
    };
    assert!(error.contains("log limit"), "{error}");
    assert!(error.contains("max_log_bytes"), "{error}");
    let run = runtime
        .execution(outcome.execution_id())
        .await
        .unwrap()
        .unwrap();
    let logged: usize = run
        .log
        .iter()
        .map(|e| serde_json::to_string(&e.result).unwrap().len())
        .sum();
    assert!(
        logged <= 64 * 1024 * 1024,
        "the log holds {logged} bytes, over the limit"
    );
    drop(run);

    let grown = after.saturating_sub(baseline);
    println!(
        "rss baseline {} MiB, after the run {} MiB, peak during it {peak}; {} reads logged ({} MiB)",
        baseline >> 20,
        after >> 20,
        run_len(&runtime, outcome.execution_id()).await,
        logged >> 20
    );
    assert!(
        grown < 48 * 1024 * 1024,
        "RSS grew by {} MiB over a baseline of {} MiB",
        grown >> 20,
        baseline >> 20
    );
}

/// The peak resident set size so far, as `/proc/self/status` reports it.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// How many entries the execution `id` logged.
async fn run_len(runtime: &Runtime, id: &str) -> usize {
    runtime
        .execution(id)
        .await
        .unwrap()
        .map_or(0, |e| e.log.len())
}
