//! Error mapping, and the conversion between rows and the core's records.

use codemode::{Decision, EntryState, Execution, ExecutionStatus, LogEntry, StoreError};
use rusqlite::{ErrorCode, Row};
use serde_json::Value;

/// Maps a rusqlite error to a [`StoreError`] that names the file and what was being done.
pub(crate) trait Ctx<T> {
    /// `what` is a short phrase such as "committing".
    fn ctx(self, location: &str, what: &str) -> Result<T, StoreError>;
}

impl<T> Ctx<T> for rusqlite::Result<T> {
    fn ctx(self, location: &str, what: &str) -> Result<T, StoreError> {
        self.map_err(|e| map_error(location, what, e))
    }
}

/// A damaged or foreign file is [`StoreError::Corrupt`]; anything else is a backend error.
pub(crate) fn map_error(location: &str, what: &str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            location: location.to_string(),
            detail: format!("{what}: {e}"),
        },
        _ => StoreError::Backend(format!("{what} ({location}): {e}")),
    }
}

/// Whether the error is a violated UNIQUE or PRIMARY KEY constraint.
pub(crate) fn is_constraint(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation)
}

/// JSON text of a value.
pub(crate) fn json(value: &Value) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// JSON text of a list of strings.
pub(crate) fn json_strings(values: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(values).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// JSON text of a list of decisions; `None` (NULL) for none.
pub(crate) fn json_decisions(decisions: &[Decision]) -> Result<Option<String>, StoreError> {
    if decisions.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(decisions)
        .map(Some)
        .map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// JSON text of one decision.
pub(crate) fn json_decision(decision: &Decision) -> Result<String, StoreError> {
    serde_json::to_string(decision).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

fn decisions(text: Option<&str>, what: &str) -> Result<Vec<Decision>, StoreError> {
    match text {
        None => Ok(Vec::new()),
        Some(text) => {
            serde_json::from_str(text).map_err(|e| StoreError::Decode(format!("{what}: {e}")))
        }
    }
}

fn value(text: &str, what: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Decode(format!("{what}: {e}")))
}

fn strings(text: &str, what: &str) -> Result<Vec<String>, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Decode(format!("{what}: {e}")))
}

/// A seq as stored (SQLite integers are signed).
pub(crate) fn seq_to_sql(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Backend(format!("seq {seq} is too large")))
}

/// The columns [`RawExecution::read`] expects, in order.
pub(crate) const EXECUTION_COLUMNS: &str =
    "id, code, status, result, error, logs, connectors, created_at, updated_at, decisions, traceparent, clock";

/// An execution row as read, before JSON and status decoding.
pub(crate) struct RawExecution {
    pub id: String,
    code: String,
    status: String,
    result: Option<String>,
    error: Option<String>,
    logs: String,
    connectors: String,
    created_at: i64,
    updated_at: i64,
    decisions: Option<String>,
    traceparent: Option<String>,
    clock: Option<String>,
}

impl RawExecution {
    /// Reads [`EXECUTION_COLUMNS`] starting at column `at`.
    pub fn read(row: &Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(RawExecution {
            id: row.get(at)?,
            code: row.get(at + 1)?,
            status: row.get(at + 2)?,
            result: row.get(at + 3)?,
            error: row.get(at + 4)?,
            logs: row.get(at + 5)?,
            connectors: row.get(at + 6)?,
            created_at: row.get(at + 7)?,
            updated_at: row.get(at + 8)?,
            decisions: row.get(at + 9)?,
            traceparent: row.get(at + 10)?,
            clock: row.get(at + 11)?,
        })
    }

    /// The execution, with its log.
    pub fn decode(self, log: Vec<LogEntry>) -> Result<Execution, StoreError> {
        let what = |field: &str| format!("execution {} {field}", self.id);
        Ok(Execution {
            clock: codemode::ClockTape::from_json(self.clock.as_deref())
                .map_err(|e| StoreError::Decode(format!("{}: {e}", what("clock"))))?,
            status: status(&self.status)?,
            log,
            result: match &self.result {
                Some(text) => Some(value(text, &what("result"))?),
                None => None,
            },
            logs: strings(&self.logs, &what("logs"))?,
            connectors: strings(&self.connectors, &what("connectors"))?,
            decisions: decisions(self.decisions.as_deref(), &what("decisions"))?,
            code: self.code,
            error: self.error,
            created_at: self.created_at,
            updated_at: self.updated_at,
            traceparent: self.traceparent,
            id: self.id,
        })
    }
}

/// Parses a stored execution status.
pub(crate) fn status(text: &str) -> Result<ExecutionStatus, StoreError> {
    ExecutionStatus::parse(text)
        .ok_or_else(|| StoreError::Decode(format!("unknown execution status {text:?}")))
}

/// The columns [`RawEntry::read`] expects, in order.
pub(crate) const ENTRY_COLUMNS: &str =
    "seq, connector, method, args, result, error, requires_approval, ephemeral, state, approved_args, decisions, delivered, read_only";

/// A log-entry row as read, before JSON and state decoding.
pub(crate) struct RawEntry {
    seq: i64,
    connector: String,
    method: String,
    args: String,
    result: Option<String>,
    error: Option<String>,
    requires_approval: bool,
    ephemeral: bool,
    state: String,
    approved_args: Option<String>,
    decisions: Option<String>,
    delivered: Option<i64>,
    read_only: bool,
}

impl RawEntry {
    /// Reads [`ENTRY_COLUMNS`] starting at column `at`.
    pub fn read(row: &Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(RawEntry {
            seq: row.get(at)?,
            connector: row.get(at + 1)?,
            method: row.get(at + 2)?,
            args: row.get(at + 3)?,
            result: row.get(at + 4)?,
            error: row.get(at + 5)?,
            requires_approval: row.get(at + 6)?,
            ephemeral: row.get(at + 7)?,
            state: row.get(at + 8)?,
            approved_args: row.get(at + 9)?,
            decisions: row.get(at + 10)?,
            delivered: row.get(at + 11)?,
            read_only: row.get(at + 12)?,
        })
    }

    /// The log entry.
    pub fn decode(self) -> Result<LogEntry, StoreError> {
        let seq = u64::try_from(self.seq)
            .map_err(|_| StoreError::Decode(format!("negative seq {}", self.seq)))?;
        let state = EntryState::parse(&self.state)
            .ok_or_else(|| StoreError::Decode(format!("unknown entry state {:?}", self.state)))?;
        Ok(LogEntry {
            seq,
            args: value(&self.args, &format!("seq {seq} args"))?,
            result: match &self.result {
                Some(text) => Some(value(text, &format!("seq {seq} result"))?),
                None => None,
            },
            connector: self.connector,
            method: self.method,
            error: self.error,
            approved_args: match &self.approved_args {
                Some(text) => Some(value(text, &format!("seq {seq} approved args"))?),
                None => None,
            },
            decisions: decisions(self.decisions.as_deref(), &format!("seq {seq} decisions"))?,
            requires_approval: self.requires_approval,
            ephemeral: self.ephemeral,
            read_only: self.read_only,
            state,
            delivered: match self.delivered {
                Some(n) => Some(u64::try_from(n).map_err(|_| {
                    StoreError::Decode(format!("seq {seq}: negative delivery position {n}"))
                })?),
                None => None,
            },
        })
    }
}
