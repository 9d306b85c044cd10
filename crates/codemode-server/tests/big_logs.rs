//! Executions with big logs: listing them and exporting their audit reads neither their logs'
//! results nor their console output, so the process's memory stays flat however often the
//! routes are called.
//!
//! Three executions whose logs hold 64 MiB each are written to a real SQLite file, then
//! `GET /api/executions` and `GET /api/audit` are called many times over HTTP on loopback.
//! The resident set size (`/proc/self/status`) is printed (`--nocapture`) and bounded.

use codemode::{
    Actor, Commit, Decision, DecisionKind, EntryState, Execution, ExecutionStatus, Lease, LogEntry,
    Runtime, Store, Transition,
};
use codemode_server::{router, ServerOptions};
use serde_json::{json, Value};
use std::sync::Arc;

/// One result's characters (under the durable value limit of 1,000,000).
const RESULT_CHARS: usize = 999_000;
/// Entries per execution: 68 results of ~1 MB make a 64 MiB log.
const ENTRIES: u64 = 68;

/// Resident set size of this process, in bytes (0 where `/proc` is missing).
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// An approved, applied write whose result is ~1 MB.
fn big_entry(seq: u64, at: i64) -> LogEntry {
    LogEntry {
        seq,
        connector: "files".into(),
        method: "write".into(),
        args: json!({ "n": seq }),
        result: Some(Value::String(
            char::from(b'a' + (seq % 26) as u8)
                .to_string()
                .repeat(RESULT_CHARS),
        )),
        error: None,
        requires_approval: true,
        ephemeral: false,
        read_only: false,
        state: EntryState::Applied,
        approved_args: None,
        decisions: vec![Decision::new(
            DecisionKind::Approve,
            Actor::cli(),
            at,
            Vec::new(),
        )],
        delivered: Some(seq),
    }
}

/// Writes a completed execution with a 64 MiB log straight into the store.
async fn store_big_execution(store: &dyn Store, id: &str, at: i64) {
    let execution = Execution {
        id: id.into(),
        code: "async () => { for (let n = 0; n < 68; n++) await files.write({ n }); }".into(),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: vec!["x".repeat(100_000)],
        connectors: vec!["files".into()],
        created_at: at,
        updated_at: at,
        decisions: vec![Decision::new(
            DecisionKind::Approve,
            Actor::cli(),
            at + 1,
            (0..ENTRIES).collect(),
        )],
        traceparent: None,
        clock: Default::default(),
    };
    let lease = Lease {
        owner: "test".into(),
        until_ms: i64::MAX / 2,
    };
    store
        .insert_execution("default", &execution, &lease, 1_000)
        .await
        .unwrap();
    // One entry a commit, so that building the data does not raise this process's memory
    // (which a later read could then reuse unseen).
    for seq in 0..ENTRIES {
        let entry = Commit {
            execution_id: id.into(),
            owner: Some("test".into()),
            entries: vec![big_entry(seq, at + 1)],
            transition: None,
            clock: None,
        };
        assert!(store.commit("default", &entry).await.unwrap());
    }
    let done = Commit {
        execution_id: id.into(),
        owner: Some("test".into()),
        entries: Vec::new(),
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Completed,
            at + 2,
        )),
        clock: None,
    };
    assert!(store.commit("default", &done).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_and_audit_keep_memory_flat_with_64_mib_logs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let store = Arc::new(codemode_sqlite::SqliteStore::open(&path).unwrap());
    for (i, id) in ["big-1", "big-2", "big-3"].into_iter().enumerate() {
        store_big_execution(store.as_ref(), id, 1_000 + i as i64 * 10).await;
    }
    let file_mb: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|f| f.unwrap().metadata().unwrap().len())
        .sum();
    let file_mb = file_mb as f64 / 1e6;
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let rt = Arc::new(Runtime::builder(store, executor).build().unwrap());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    // The peer's address, for the loopback rule of a server without tokens.
    let app = router(rt, ServerOptions::default())
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let http = http.clone();
        let url = format!("{base}{path}");
        async move {
            let answer = http.get(&url).send().await.unwrap();
            let status = answer.status();
            let body = answer.text().await.unwrap();
            assert!(status.is_success(), "{url}: {status} {body}");
            body
        }
    };
    // Warm up (statement caches, page cache, sandbox stock) before the baseline.
    let list: Vec<Value> = serde_json::from_str(&get("/api/executions").await).unwrap();
    assert_eq!(list.len(), 3, "{list:?}");
    assert_eq!(list[0]["id"], "big-3");
    assert_eq!(list[0]["entries"], ENTRIES);
    assert!(list[0].get("log").is_none(), "a listing carries no log");
    let audit: Vec<Value> = serde_json::from_str(&get("/api/audit?since=0").await).unwrap();
    let applied = audit.iter().filter(|r| r["event"] == "applied").count();
    assert_eq!(
        applied,
        3 * ENTRIES as usize,
        "every applied call is audited"
    );
    let before = rss();
    let rounds = 30;
    for _ in 0..rounds {
        get("/api/executions?limit=500").await;
        get("/api/audit?since=0").await;
        get("/api/audit?since=0&format=csv").await;
    }
    let after = rss();
    let grown = after.saturating_sub(before);
    println!(
        "3 executions of {} MiB of log each ({file_mb:.0} MB of files): RSS {:.1} MiB before, \
         {:.1} MiB after {rounds} rounds of listing and audit (+{:.1} MiB)",
        (ENTRIES as usize * RESULT_CHARS) >> 20,
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        grown as f64 / 1048576.0,
    );
    assert!(
        grown <= 32 * 1024 * 1024,
        "RSS grew {grown} bytes: a listing or an audit export read the logs"
    );
}
