//! The records the runtime keeps and the outcomes it returns.

use crate::error_code::ErrorCode;
use crate::status::{EntryState, ExecutionStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One logged connector call or `codemode.step`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    /// Position in the execution's call order, from 0.
    pub seq: u64,
    /// The connector name (`codemode` for steps).
    pub connector: String,
    /// The method name (`step` for steps).
    pub method: String,
    /// The arguments, as validated JSON.
    pub args: Value,
    /// The recorded result (absent while executing or pending, and for ephemeral entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The recorded error message, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the call needed a person's approval.
    pub requires_approval: bool,
    /// A `replay: reexecute` entry: its result is not stored and it runs on every pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ephemeral: bool,
    /// Whether the tool was read-only (safe to run twice, nothing to undo). Absent means a
    /// write, the safe side for entries recorded before the flag existed: retention keeps
    /// an execution with an applied write for its rollback.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// What happened to the call.
    pub state: EntryState,
    /// The arguments a person approved in place of `args`; the connector ran with these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_args: Option<Value>,
    /// The decisions that changed this entry (approval, rejection, revert), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<Decision>,
    /// When the result reached the sandbox, as a position in the execution's delivery order
    /// (absent until then); a replay delivers recorded results in this order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<u64>,
}

impl LogEntry {
    /// The arguments the connector runs with: the approved ones, else the model's.
    pub fn effective_args(&self) -> &Value {
        self.approved_args.as_ref().unwrap_or(&self.args)
    }
}

/// One execution: the audit record of a `call(code)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// Stable id.
    pub id: String,
    /// The code as the model wrote it.
    pub code: String,
    /// Where it stands.
    pub status: ExecutionStatus,
    /// Every logged call, in seq order.
    pub log: Vec<LogEntry>,
    /// The completed result (or an omission message when it was too large to keep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error message of a failed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Console output of the last pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// The connector names configured when the execution started.
    pub connectors: Vec<String>,
    /// Epoch milliseconds.
    pub created_at: i64,
    /// Epoch milliseconds.
    pub updated_at: i64,
    /// Every decision people made about it (approve, reject, rollback, cancel), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<Decision>,
    /// The trace context of its first pass (a W3C `traceparent`, opaque to the runtime),
    /// which later passes continue; kept only when the host traces ([`crate::TraceCarrier`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The clock readings its passes took and where its steps ended, which later passes
    /// replay (see [`crate::tape`]).
    #[serde(default, skip_serializing_if = "crate::tape::ClockTape::is_empty")]
    pub clock: crate::tape::ClockTape,
}

impl Execution {
    /// The `connector.method`s a standing approval (scope `execution`) covers in this run.
    pub fn standing_approval(&self, connector: &str, method: &str) -> Option<&Decision> {
        self.decisions
            .iter()
            .rev()
            .find(|d| d.covers(connector, method))
    }
}

/// How many characters of an execution's code a listing carries.
pub const CODE_PREVIEW_CHARS: usize = 500;

/// One execution as a listing shows it: no log, no result, no console output, and only the
/// start of its code, so a page of them is small whatever the executions hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionSummary {
    /// Stable id.
    pub id: String,
    /// Where it stands.
    pub status: ExecutionStatus,
    /// The first [`CODE_PREVIEW_CHARS`] characters of the code.
    pub code: String,
    /// Whether the code is longer than `code`.
    #[serde(default)]
    pub code_cut: bool,
    /// The connector names configured when the execution started.
    pub connectors: Vec<String>,
    /// Epoch milliseconds.
    pub created_at: i64,
    /// Epoch milliseconds.
    pub updated_at: i64,
    /// Log entries, `codemode` steps and SDK calls included.
    pub entries: u64,
    /// Connector calls (entries outside the `codemode` namespace).
    pub calls: u64,
    /// Entries waiting for approval.
    pub pending: u64,
}

impl ExecutionSummary {
    /// The summary of a whole execution.
    pub fn of(e: &Execution) -> Self {
        let count =
            |keep: &dyn Fn(&LogEntry) -> bool| e.log.iter().filter(|l| keep(l)).count() as u64;
        ExecutionSummary {
            id: e.id.clone(),
            status: e.status,
            code: e.code.chars().take(CODE_PREVIEW_CHARS).collect(),
            code_cut: e.code.chars().nth(CODE_PREVIEW_CHARS).is_some(),
            connectors: e.connectors.clone(),
            created_at: e.created_at,
            updated_at: e.updated_at,
            entries: e.log.len() as u64,
            calls: count(&|l| l.connector != crate::executor::SDK_NAMESPACE),
            pending: count(&|l| l.state == crate::status::EntryState::Pending),
        }
    }
}

/// An execution as an audit export reads it: its decisions, and its `applied` and
/// `reverted` entries and those a decision concerned, without their results or errors; no
/// code, result, error or console output.
pub fn audit_view(mut e: Execution) -> Execution {
    e.code = String::new();
    e.log.retain(|l| {
        matches!(l.state, EntryState::Applied | EntryState::Reverted) || !l.decisions.is_empty()
    });
    for l in &mut e.log {
        l.result = None;
        l.error = None;
    }
    e.result = None;
    e.error = None;
    e.logs = Vec::new();
    e
}

/// Who made a decision: a token's name, `cli`, `elicitation` or `local`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Actor(String);

impl Actor {
    /// An actor of this name (a token's name, or one of the fixed ones).
    pub fn new(name: impl Into<String>) -> Self {
        Actor(name.into())
    }

    /// The embedding program itself, through the library API.
    pub fn local() -> Self {
        Actor("local".into())
    }

    /// A person at the `codemode` command line.
    pub fn cli() -> Self {
        Actor("cli".into())
    }

    /// A person answering an MCP client's elicitation.
    pub fn elicitation() -> Self {
        Actor("elicitation".into())
    }

    /// The name as recorded.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Actor {
    fn default() -> Self {
        Actor::local()
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Actor {
    fn from(name: &str) -> Self {
        Actor::new(name)
    }
}

impl From<String> for Actor {
    fn from(name: String) -> Self {
        Actor(name)
    }
}

/// What a person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Pending actions were approved.
    Approve,
    /// Pending actions were rejected.
    Reject,
    /// Applied actions were reverted.
    Rollback,
    /// A running execution was cancelled.
    Cancel,
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// Only the pending actions approved.
    #[default]
    Action,
    /// Also every later call of the same `connector.method` in this execution.
    Execution,
}

/// One decision: what, who, when, and which entries it concerned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// What was decided.
    pub kind: DecisionKind,
    /// Who decided.
    pub by: Actor,
    /// Epoch milliseconds.
    pub at: i64,
    /// The log entries it concerned (on the execution's record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seqs: Vec<u64>,
    /// An approval's reach (absent for other decisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ApprovalScope>,
    /// The `connector.method`s a standing approval covers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
}

impl Decision {
    /// A decision of `kind` by `by` at `at`, concerning `seqs`.
    pub fn new(kind: DecisionKind, by: Actor, at: i64, seqs: Vec<u64>) -> Self {
        Decision {
            kind,
            by,
            at,
            seqs,
            scope: None,
            methods: Vec::new(),
        }
    }

    /// Whether this is a standing approval covering `connector.method`.
    pub fn covers(&self, connector: &str, method: &str) -> bool {
        self.kind == DecisionKind::Approve
            && self.scope == Some(ApprovalScope::Execution)
            && self.methods.iter().any(|m| {
                m.split_once('.')
                    .is_some_and(|(c, n)| c == connector && n == method)
            })
    }

    /// The same decision as recorded on one log entry (without the execution's seq list).
    pub fn for_entry(&self) -> Decision {
        Decision {
            seqs: Vec::new(),
            ..self.clone()
        }
    }
}

/// An action waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingAction {
    /// The paused execution.
    pub execution_id: String,
    /// The action's place in the log.
    pub seq: u64,
    /// The connector name.
    pub connector: String,
    /// The method name.
    pub method: String,
    /// The arguments the action will run with (as the model wrote them).
    pub args: Value,
}

/// A saved script the model can run by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snippet {
    /// Unique name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The source code.
    pub code: String,
    /// Epoch milliseconds.
    pub saved_at: i64,
    /// JSON Schema for the `input` it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The connector names of its source execution.
    #[serde(default)]
    pub connectors: Vec<String>,
}

/// What `call` and `approve` return: never an exception for anything the model did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The code returned.
    #[serde(rename_all = "camelCase")]
    Completed {
        /// The execution.
        execution_id: String,
        /// The result as the model should see it (after `transform_result`).
        result: Value,
        /// Console output.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        logs: Vec<String>,
    },
    /// The code reached an action that needs approval.
    #[serde(rename_all = "camelCase")]
    Paused {
        /// The execution.
        execution_id: String,
        /// What waits for approval.
        pending: Vec<PendingAction>,
    },
    /// The code failed, replay diverged, or a limit was hit.
    #[serde(rename_all = "camelCase")]
    Error {
        /// The execution.
        execution_id: String,
        /// What went wrong and how to fix it.
        error: String,
        /// What kind of failure it was.
        #[serde(default)]
        code: ErrorCode,
        /// Whether running the same code again may succeed (`code`'s answer).
        #[serde(default)]
        retryable: bool,
        /// Console output.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        logs: Vec<String>,
    },
}

impl Outcome {
    /// An error outcome of `code`, with its `retryable` answer.
    pub fn error(
        execution_id: impl Into<String>,
        error: impl Into<String>,
        code: ErrorCode,
        logs: Vec<String>,
    ) -> Self {
        Outcome::Error {
            execution_id: execution_id.into(),
            error: error.into(),
            code,
            retryable: code.retryable(),
            logs,
        }
    }

    /// The execution this outcome belongs to.
    pub fn execution_id(&self) -> &str {
        match self {
            Outcome::Completed { execution_id, .. }
            | Outcome::Paused { execution_id, .. }
            | Outcome::Error { execution_id, .. } => execution_id,
        }
    }

    /// The status the outcome reports.
    pub fn status(&self) -> ExecutionStatus {
        match self {
            Outcome::Completed { .. } => ExecutionStatus::Completed,
            Outcome::Paused { .. } => ExecutionStatus::Paused,
            Outcome::Error { .. } => ExecutionStatus::Error,
        }
    }
}

/// What a rollback did, entry by entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackReport {
    /// The execution.
    pub execution_id: String,
    /// Seqs reverted, newest first.
    pub reverted: Vec<u64>,
    /// Seqs that changed something and stay applied: no revert, or the connector is gone.
    pub skipped: Vec<u64>,
    /// Reverts that failed, with their messages.
    pub failed: Vec<RevertFailure>,
    /// Seqs left `executing` by an interrupted pass (they may have been applied) that no
    /// revert could undo: no revert, or the connector is gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<u64>,
    /// The status after the rollback.
    pub status: ExecutionStatus,
}

/// One revert that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertFailure {
    /// The entry.
    pub seq: u64,
    /// `connector.method`.
    pub path: String,
    /// Why it failed.
    pub error: String,
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The code of a stored execution, beside the execution (the codes themselves know nothing of
/// executions).
impl ErrorCode {
    /// The code of an execution as the store has it: its error's (with the errors its log
    /// recorded for connector calls), `REJECTED` or `CANCELLED`; `None` for other statuses.
    pub fn of_execution(execution: &Execution) -> Option<Self> {
        match execution.status {
            ExecutionStatus::Rejected => Some(ErrorCode::Rejected),
            ExecutionStatus::Cancelled => Some(ErrorCode::Cancelled),
            ExecutionStatus::Error => {
                let thrown: Vec<(ErrorCode, String)> = execution
                    .log
                    .iter()
                    .filter(|l| l.state == EntryState::Error)
                    .filter_map(|l| {
                        let message = l.error.as_ref()?;
                        let code = ErrorCode::of_host_throw(&l.connector, &l.method, true, message);
                        Some((code, message.clone()))
                    })
                    .collect();
                Some(ErrorCode::of_error(
                    execution.error.as_deref().unwrap_or_default(),
                    &thrown,
                ))
            }
            _ => None,
        }
    }
}
