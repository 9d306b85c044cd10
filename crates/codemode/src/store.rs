//! The durable state behind a runtime: executions, their logs, and snippets.
//!
//! Every method takes the runtime's name: runtimes with different names share a database
//! but never each other's history. Every status change is a compare-and-set on the status
//! the caller expects, so that many nodes can share one store and exactly one wins a race.

use crate::model::{Decision, Execution, ExecutionSummary, LogEntry, PendingAction, Snippet};
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

/// How long, by default, retention keeps a finished execution that holds a write (approved or not)
/// still applied (not reverted), so that it can be audited and rolled back: 7 days, counted
/// from its last update. The stores prune such an execution only once it is older.
pub const DEFAULT_RETENTION_MIN_AGE: std::time::Duration =
    std::time::Duration::from_secs(7 * 24 * 60 * 60);

/// How long, by default, the audit archive keeps the audit record of an execution that was
/// pruned or deleted: 90 days, counted from the execution's last update. The stores delete
/// older archive rows when they prune.
pub const DEFAULT_AUDIT_MAX_AGE: std::time::Duration =
    std::time::Duration::from_secs(90 * 24 * 60 * 60);

/// How long a store keeps what a person may still need: executions holding writes
/// still applied, and the archived audit records of removed executions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionAges {
    min_age_ms: i64,
    audit_max_age_ms: i64,
}

impl Default for RetentionAges {
    fn default() -> Self {
        RetentionAges {
            min_age_ms: duration_ms(DEFAULT_RETENTION_MIN_AGE),
            audit_max_age_ms: duration_ms(DEFAULT_AUDIT_MAX_AGE),
        }
    }
}

impl RetentionAges {
    /// Sets how long pruning keeps an execution holding a write still applied.
    pub fn set_min_age(&mut self, min_age: std::time::Duration) {
        self.min_age_ms = duration_ms(min_age);
    }

    /// Sets how long the audit archive keeps a removed execution's audit record.
    pub fn set_audit_max_age(&mut self, max_age: std::time::Duration) {
        self.audit_max_age_ms = duration_ms(max_age);
    }

    /// The epoch ms from which pruning keeps applied writes.
    pub fn protect_since_ms(&self) -> i64 {
        crate::now_ms().saturating_sub(self.min_age_ms)
    }

    /// The epoch ms from which prunes keep archived audit records.
    pub fn audit_since_ms(&self) -> i64 {
        crate::now_ms().saturating_sub(self.audit_max_age_ms)
    }
}

/// A duration in epoch milliseconds, saturating.
fn duration_ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
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
    /// A decision to append to the execution's `decisions`, with the change.
    pub decision: Option<Decision>,
}

/// An audit window's live executions and archived records merged oldest first (live first on
/// equal creation times), each id once (the live one), at most `limit`: what every store's
/// `audit` answers.
pub fn merge_audit_records(
    live: Vec<Execution>,
    archived: Vec<Execution>,
    limit: usize,
) -> Vec<Execution> {
    if archived.is_empty() {
        return live;
    }
    let ids: std::collections::HashSet<String> = live.iter().map(|e| e.id.clone()).collect();
    let mut all = live;
    all.extend(archived.into_iter().filter(|e| !ids.contains(&e.id)));
    all.sort_by_key(|e| e.created_at);
    all.truncate(limit);
    all
}

/// Refuses a status change outside the core's transition table (a caller bug): stores call
/// it before writing one, so an illegal change is never written.
pub fn check_transition(from: ExecutionStatus, to: ExecutionStatus) -> Result<(), StoreError> {
    if from.can_become(to) {
        Ok(())
    } else {
        Err(StoreError::IllegalTransition { from, to })
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
            decision: None,
        }
    }

    /// The same change, recording `decision` with it.
    pub fn with_decision(mut self, decision: Decision) -> Self {
        self.decision = Some(decision);
        self
    }
}

/// One atomic write: log entries upserted by seq, then an optional status change.
///
/// With an `owner`, the write happens only while that node holds the execution's lease (a
/// pass's, or a decision's taken with [`Store::hold`]). Without one, a status change happens
/// only while no lease is live (`at_ms` past its end), so it never interleaves with a pass
/// or a decision; the one exception is `running -> cancelled`, which takes the execution from
/// the pass that holds it (that pass's next commit then fails). A status change to anything
/// but `running` drops the lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// The execution written to.
    pub execution_id: String,
    /// When set, the write happens only while this node still holds the lease.
    pub owner: Option<String>,
    /// Entries to insert or replace (by seq).
    pub entries: Vec<LogEntry>,
    /// A status change to make in the same transaction.
    pub transition: Option<Transition>,
    /// The execution's clock tape, replacing the one recorded (`None`: unchanged).
    pub clock: Option<crate::tape::ClockTape>,
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

/// What a [`Store::delete_execution`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// The execution (terminal, not held) and its log are gone.
    Deleted(ExecutionStatus),
    /// Nothing deleted: the execution is running or paused, or a decision holds it.
    Refused(ExecutionStatus),
    /// No execution has this id in this runtime.
    Unknown,
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
    /// A status change outside the core's transition table ([`crate::status`]) was asked
    /// for: a bug in the caller. Nothing was written.
    #[error("illegal status transition {from} -> {to}: codemode::status does not allow it; nothing was written")]
    IllegalTransition {
        /// The status the change started from.
        from: ExecutionStatus,
        /// The status it asked for.
        to: ExecutionStatus,
    },
}

/// Where executions, logs and snippets live.
///
/// `codemode-sqlite` keeps them in one file; `codemode-postgres` in a database that many
/// nodes share. A new store must pass the store contract of `codemode-conformance`; it owes
/// executions only. The workspace connector's files are a trait of their own,
/// [`FileStore`](crate::files::FileStore), which both of those stores implement too.
/// Applications usually read through the [`Runtime`](crate::Runtime) (`execution`,
/// `executions`, `pending`), but the store can be read directly, e.g. for an audit export:
///
/// ```
/// use codemode::{EntryState, ExecutionStatus, Runtime, RustConnector, RustTool, Store};
/// use serde_json::{json, Value};
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db"))?);
/// let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
/// let math = RustConnector::new("math").tool(
///     RustTool::new("double", |args: Value, _ctx| async move { Ok(json!(args["n"].as_i64().unwrap_or(0) * 2)) })
///         .read_only(),
/// );
/// let runtime = Runtime::builder(store.clone(), executor)
///     .name("audit-demo")
///     .connector(math)
///     .build()?;
/// let outcome = runtime.call("async () => { await math.double({ n: 21 }); return 'done'; }").await?;
///
/// let record = store.execution("audit-demo", outcome.execution_id()).await?.expect("recorded");
/// assert_eq!(record.status, ExecutionStatus::Completed);
/// assert_eq!(record.log[0].method, "double");
/// assert_eq!(record.log[0].result, Some(json!(42)));
/// assert_eq!(record.log[0].state, EntryState::Applied);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Store: Send + Sync {
    /// Inserts a new running execution, then prunes terminal ones beyond `keep` (oldest
    /// first, as [`Store::prune_executions`]), in one transaction. Returns how many were pruned.
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

    /// At most `limit` executions newest first, as summaries (no log, result or console
    /// output; the code cut to its start), optionally of one status, starting after the
    /// execution `before` (the last of the page before; one deleted meanwhile ends the
    /// listing). The stores read only the summaries' columns and count entries in the
    /// database; this default reads whole executions.
    async fn execution_summaries(
        &self,
        runtime: &str,
        status: Option<ExecutionStatus>,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let all = self.executions(runtime, None, status).await?;
        let start = match before {
            None => 0,
            Some(id) => all
                .iter()
                .position(|e| e.id == id)
                .map_or(all.len(), |i| i + 1),
        };
        Ok(all
            .iter()
            .skip(start)
            .take(limit)
            .map(ExecutionSummary::of)
            .collect())
    }

    /// What an audit export of `[since_ms, until_ms)` needs: the executions updated at or
    /// after `since_ms` and created before `until_ms`, oldest first, at most `limit`, each
    /// with its decisions and only its `applied` and `reverted` entries and those a decision
    /// concerned (that carry one), whose results and errors are left out (as are the executions' code, results and console output), including those pruned or deleted whose record the store archived. The stores filter in
    /// the database; this default reads whole executions.
    async fn audit_executions(
        &self,
        runtime: &str,
        since_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Execution>, StoreError> {
        let mut all = self.executions(runtime, None, None).await?;
        all.reverse();
        Ok(all
            .into_iter()
            .filter(|e| e.updated_at >= since_ms && e.created_at < until_ms)
            .take(limit)
            .map(crate::model::audit_view)
            .collect())
    }

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

    /// Takes `lease` on an execution in `from` (never `running`) without changing its
    /// status, and reads it in the same transaction: a decision (rollback) holds it so that
    /// no pass, other decision, expiry or delete interleaves. Refused while a lease is live.
    async fn hold(
        &self,
        runtime: &str,
        id: &str,
        from: ExecutionStatus,
        lease: &Lease,
        now_ms: i64,
    ) -> Result<Claim, StoreError>;

    /// Drops the lease `owner` holds on an execution that is not running; false if it did
    /// not hold it.
    async fn release(&self, runtime: &str, id: &str, owner: &str) -> Result<bool, StoreError>;

    /// Deletes one terminal execution and its log, unless a live lease holds it (`now_ms`
    /// decides); running and paused ones are refused. A store that also keeps workspace
    /// files deletes the execution's undo records in the same transaction (see
    /// [`FileStore`](crate::files::FileStore)).
    async fn delete_execution(
        &self,
        runtime: &str,
        id: &str,
        now_ms: i64,
    ) -> Result<Deletion, StoreError>;

    /// Deletes terminal executions beyond the newest `keep`, with their logs (and, in a store
    /// that also keeps workspace files, their undo records); returns how many.
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

    /// At most `limit` pending actions of paused executions, in the order of
    /// [`Store::pending`], starting after `after` (the execution id and seq of the last
    /// action of the page before). The stores page in the database from the place of the
    /// cursor's execution, whatever its status now (one deleted meanwhile ends the listing);
    /// this default reads every pending action and keeps those after the cursor (none when
    /// the cursor is no longer pending).
    async fn pending_page(
        &self,
        runtime: &str,
        after: Option<(&str, u64)>,
        limit: usize,
    ) -> Result<Vec<PendingAction>, StoreError> {
        let all = self.pending(runtime, None).await?;
        let start = match after {
            None => 0,
            Some((id, seq)) => all
                .iter()
                .position(|p| p.execution_id == id && p.seq == seq)
                .map_or(all.len(), |i| i + 1),
        };
        Ok(all.into_iter().skip(start).take(limit).collect())
    }

    /// Saves a snippet, replacing one of the same name.
    async fn put_snippet(&self, runtime: &str, snippet: &Snippet) -> Result<(), StoreError>;

    /// One snippet by name.
    async fn snippet(&self, runtime: &str, name: &str) -> Result<Option<Snippet>, StoreError>;

    /// All snippets, ordered by name.
    async fn snippets(&self, runtime: &str) -> Result<Vec<Snippet>, StoreError>;

    /// Deletes a snippet; returns whether it existed.
    async fn delete_snippet(&self, runtime: &str, name: &str) -> Result<bool, StoreError>;
}
