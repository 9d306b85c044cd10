//! The durable state behind a runtime: executions, their logs, and snippets.
//!
//! Every method takes the runtime's name: runtimes with different names share a database
//! but never each other's history. Every status change is a compare-and-set on the status
//! the caller expects, so that many nodes can share one store and exactly one wins a race.

use crate::model::{Execution, LogEntry, PendingAction, Snippet};
use crate::status::ExecutionStatus;
use async_trait::async_trait;
use serde_json::Value;

/// Who runs a pass, and until when the claim holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The node (runtime instance) running the pass.
    pub owner: String,
    /// Epoch ms after which another node may take the execution over or expire it.
    pub until_ms: i64,
}

/// A status change, applied only if the execution is still in `from`.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The status the caller expects.
    pub from: ExecutionStatus,
    /// The new status.
    pub to: ExecutionStatus,
    /// The completed result to record.
    pub result: Option<Value>,
    /// The error to record.
    pub error: Option<String>,
    /// The console output to record (the last pass's).
    pub logs: Option<Vec<String>>,
    /// Epoch ms.
    pub at_ms: i64,
}

/// Refuses a status change outside the core's transition table (a caller bug): stores call
/// it before writing one, so an illegal change is never written.
pub fn check_transition(from: ExecutionStatus, to: ExecutionStatus) -> Result<(), StoreError> {
    if from.can_become(to) {
        Ok(())
    } else {
        Err(StoreError::Backend(format!(
            "illegal status transition {from} -> {to}"
        )))
    }
}

impl Transition {
    /// A bare status change at `at_ms`.
    pub fn new(from: ExecutionStatus, to: ExecutionStatus, at_ms: i64) -> Self {
        Transition {
            from,
            to,
            result: None,
            error: None,
            logs: None,
            at_ms,
        }
    }
}

/// One atomic write: log entries upserted by seq, then an optional status change.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// The execution written to.
    pub execution_id: String,
    /// When set, the write happens only while this node still holds the running lease.
    pub owner: Option<String>,
    /// Entries to insert or replace (by seq).
    pub entries: Vec<LogEntry>,
    /// A status change to make in the same transaction.
    pub transition: Option<Transition>,
}

/// What a [`Store::claim`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The caller now runs the execution: here as claimed (`running`, updated at `now_ms`),
    /// with its log, read in the claiming transaction.
    Won(Execution),
    /// Not claimed, nothing written: the execution as it is (another status, a lease that
    /// still holds, or a recorded connector that is not available).
    Refused(Execution),
    /// No execution has this id in this runtime.
    Unknown,
}

impl Claim {
    /// Whether the caller won the claim.
    pub fn is_won(&self) -> bool {
        matches!(self, Claim::Won(_))
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database is not one of ours, or is damaged.
    #[error("the store at {location} is not a codemode database or is damaged: {detail}")]
    Corrupt {
        /// File path or URL.
        location: String,
        /// What was found.
        detail: String,
    },
    /// The database was written by a newer version.
    #[error("the store at {location} has schema version {found}, newer than the {supported} this build supports; upgrade codemode or point it at another store")]
    NewerSchema {
        /// File path or URL.
        location: String,
        /// Version found.
        found: i64,
        /// Highest version this build knows.
        supported: i64,
    },
    /// A stored value could not be read back.
    #[error("stored data is unreadable: {0}")]
    Decode(String),
    /// The backend failed (I/O, connection, constraint).
    #[error("store error: {0}")]
    Backend(String),
}

/// Where executions, logs and snippets live.
#[async_trait]
pub trait Store: Send + Sync {
    /// Inserts a new running execution, then prunes terminal ones beyond `keep` (oldest
    /// first), in one transaction. Returns how many were pruned.
    async fn insert_execution(
        &self,
        runtime: &str,
        execution: &Execution,
        lease: &Lease,
        keep: usize,
    ) -> Result<usize, StoreError>;

    /// One execution with its log.
    async fn execution(&self, runtime: &str, id: &str) -> Result<Option<Execution>, StoreError>;

    /// Executions newest first, with their logs, optionally of one status.
    async fn executions(
        &self,
        runtime: &str,
        limit: Option<usize>,
        status: Option<ExecutionStatus>,
    ) -> Result<Vec<Execution>, StoreError>;

    /// Applies a [`Commit`] atomically. Returns false, writing nothing, when the expected
    /// status or the lease owner no longer holds.
    async fn commit(&self, runtime: &str, commit: &Commit) -> Result<bool, StoreError>;

    /// Moves `from` to `running` under `lease`, and reads the execution in the same
    /// transaction. It is refused unless the execution is in `from` (from `running`: once the
    /// old lease expired, `now_ms` past it) and every connector it recorded is `available`.
    async fn claim(
        &self,
        runtime: &str,
        id: &str,
        from: ExecutionStatus,
        lease: &Lease,
        now_ms: i64,
        available: &[String],
    ) -> Result<Claim, StoreError>;

    /// Deletes one execution and its log; returns its status if it existed.
    async fn delete_execution(
        &self,
        runtime: &str,
        id: &str,
    ) -> Result<Option<ExecutionStatus>, StoreError>;

    /// Deletes terminal executions beyond the newest `keep`; returns how many.
    async fn prune_executions(&self, runtime: &str, keep: usize) -> Result<usize, StoreError>;

    /// Running and paused executions last updated before `before_ms` (running ones only
    /// once their lease has expired).
    async fn stale_executions(
        &self,
        runtime: &str,
        before_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<(String, ExecutionStatus)>, StoreError>;

    /// Pending actions of paused executions (of one, when `id` is given), newest first.
    async fn pending(
        &self,
        runtime: &str,
        id: Option<&str>,
    ) -> Result<Vec<PendingAction>, StoreError>;

    /// Saves a snippet, replacing one of the same name.
    async fn put_snippet(&self, runtime: &str, snippet: &Snippet) -> Result<(), StoreError>;

    /// One snippet by name.
    async fn snippet(&self, runtime: &str, name: &str) -> Result<Option<Snippet>, StoreError>;

    /// All snippets, ordered by name.
    async fn snippets(&self, runtime: &str) -> Result<Vec<Snippet>, StoreError>;

    /// Deletes a snippet; returns whether it existed.
    async fn delete_snippet(&self, runtime: &str, name: &str) -> Result<bool, StoreError>;
}
