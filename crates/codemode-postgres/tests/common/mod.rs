//! Shared by the store tests: a scratch database per test, and records to write.
#![allow(dead_code)]

use codemode::{EntryState, Execution, ExecutionStatus, Lease, LogEntry, Store};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use serde_json::json;

/// A scratch database and a store on it; `None` (after a loud SKIPPED line) without a server.
pub async fn setup(test: &str) -> Option<(ScratchDatabase, PostgresStore)> {
    let db = ScratchDatabase::for_tests(test)
        .await
        .expect("the PostgreSQL test server")?;
    let store = PostgresStore::connect(db.url()).await.expect("connect");
    Some((db, store))
}

/// Returns from the test when there is no server (outside CI).
#[macro_export]
macro_rules! setup_or_skip {
    ($name:expr) => {
        match common::setup($name).await {
            Some(pair) => pair,
            None => return,
        }
    };
}

/// A running execution with no log.
pub fn execution(id: &str, created_at: i64) -> Execution {
    Execution {
        id: id.to_string(),
        code: format!("async () => {{ return {id:?}; }}"),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: Vec::new(),
        connectors: vec!["probe".into()],
        created_at,
        updated_at: created_at,
        decisions: Vec::new(),
        traceparent: None,
        clock: Default::default(),
    }
}

/// The connectors [`execution`] records, all available to a claim.
pub fn available() -> Vec<String> {
    execution("", 0).connectors
}

/// A lease held by `owner` until `until_ms`.
pub fn lease(owner: &str, until_ms: i64) -> Lease {
    Lease {
        owner: owner.to_string(),
        until_ms,
    }
}

/// An entry at `seq` in `state`.
pub fn entry(seq: u64, state: EntryState) -> LogEntry {
    LogEntry {
        seq,
        connector: "probe".into(),
        method: "write".into(),
        args: json!({ "value": seq, "b": 1, "a": 2 }),
        result: (state == EntryState::Applied).then(|| json!({ "ok": seq, "z": 0, "y": [1, 2] })),
        error: None,
        requires_approval: state == EntryState::Pending,
        ephemeral: false,
        read_only: false,
        state,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    }
}

/// Inserts `id` running under `owner`, with a long lease.
pub async fn insert(store: &dyn Store, runtime: &str, id: &str, owner: &str, at: i64) {
    store
        .insert_execution(
            runtime,
            &execution(id, at),
            &lease(owner, at + 60_000),
            1000,
        )
        .await
        .expect("insert");
}

/// A plain connection to `url`, for statements the store never makes.
pub async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("raw connection");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}
