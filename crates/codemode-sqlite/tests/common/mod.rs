//! Helpers shared by the store tests: a store on a real file, and sample records.
#![allow(dead_code)]

use codemode::{EntryState, Execution, ExecutionStatus, Lease, LogEntry, Snippet};
use codemode_sqlite::SqliteStore;
use serde_json::json;
use std::path::PathBuf;
use tempfile::TempDir;

/// The runtime name most tests use.
pub const RT: &str = "default";

/// A store on a fresh file in a temp dir (kept alive by the returned dir).
pub fn store() -> (TempDir, PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("codemode.db");
    let store = SqliteStore::open(&path).expect("open");
    (dir, path, store)
}

/// A running execution created at `created_at`.
pub fn execution(id: &str, created_at: i64) -> Execution {
    Execution {
        id: id.to_string(),
        code: format!("async () => \"{id}\""),
        status: ExecutionStatus::Running,
        log: Vec::new(),
        result: None,
        error: None,
        logs: Vec::new(),
        connectors: vec!["github".into(), "stripe".into()],
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
        connector: "github".into(),
        method: "create_issue".into(),
        args: json!({"title": format!("issue {seq}"), "labels": ["a", "b"]}),
        result: (state == EntryState::Applied).then(|| json!({"number": seq})),
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

/// A snippet named `name`.
pub fn snippet(name: &str) -> Snippet {
    Snippet {
        name: name.to_string(),
        description: format!("the {name} recipe"),
        code: "async (input) => input".into(),
        saved_at: 1_000,
        input_schema: Some(json!({"type": "object"})),
        connectors: vec!["github".into()],
    }
}
