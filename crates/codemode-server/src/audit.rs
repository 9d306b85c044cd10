//! The audit export: every decision people made (who, when, what, with which arguments) and
//! every applied and reverted connector call, in time order, built from the stored executions.

use codemode::{ApprovalScope, DecisionKind, EntryState, Execution, LogEntry, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an audit record reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// Pending actions were approved.
    Approve,
    /// A pending action was rejected.
    Reject,
    /// Applied actions were reverted (the decision; each revert follows as `reverted`).
    Rollback,
    /// A running execution was cancelled.
    Cancel,
    /// A connector call ran and its result was recorded.
    Applied,
    /// An applied call was compensated by its connector's revert.
    Reverted,
}

impl AuditEvent {
    fn of(kind: DecisionKind) -> Self {
        match kind {
            DecisionKind::Approve => AuditEvent::Approve,
            DecisionKind::Reject => AuditEvent::Reject,
            DecisionKind::Rollback => AuditEvent::Rollback,
            DecisionKind::Cancel => AuditEvent::Cancel,
        }
    }

    /// The name as exported.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditEvent::Approve => "approve",
            AuditEvent::Reject => "reject",
            AuditEvent::Rollback => "rollback",
            AuditEvent::Cancel => "cancel",
            AuditEvent::Applied => "applied",
            AuditEvent::Reverted => "reverted",
        }
    }

    /// Decisions sort before the calls they allowed or undid at the same instant.
    fn rank(self) -> u8 {
        match self {
            AuditEvent::Applied => 1,
            AuditEvent::Reverted => 2,
            _ => 0,
        }
    }
}

/// One connector call a record concerns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditCall {
    /// The call's place in the execution's log.
    pub seq: u64,
    /// The connector name.
    pub connector: String,
    /// The method name.
    pub method: String,
    /// The arguments as the model wrote them.
    pub args: Value,
    /// The arguments a person approved in their place (the connector ran with these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_args: Option<Value>,
}

impl AuditCall {
    fn of(entry: &LogEntry) -> Self {
        AuditCall {
            seq: entry.seq,
            connector: entry.connector.clone(),
            method: entry.method.clone(),
            args: entry.args.clone(),
            approved_args: entry.approved_args.clone(),
        }
    }
}

/// One line of the audit export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// When, in epoch milliseconds. An `applied` call ran at or after this instant: the
    /// approval that let it run, else the start of its execution (the log keeps no per-call
    /// time).
    pub at: i64,
    /// `at` in RFC 3339 (UTC).
    pub time: String,
    /// The execution.
    pub execution_id: String,
    /// What happened.
    pub event: AuditEvent,
    /// Who decided (decisions and reverts; absent for calls the code made on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// An approval's reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ApprovalScope>,
    /// The `connector.method`s a standing approval covers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// The calls concerned (one for `applied` and `reverted`; none for a cancel).
    #[serde(default)]
    pub calls: Vec<AuditCall>,
}

/// The window of an export: `since` inclusive, `until` exclusive, epoch milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditRange {
    /// The first instant included.
    pub since: i64,
    /// The first instant excluded (none: up to now).
    pub until: Option<i64>,
}

impl AuditRange {
    fn contains(&self, at: i64) -> bool {
        at >= self.since && self.until.is_none_or(|u| at < u)
    }
}

/// The records of one execution, unordered.
pub fn records_of(e: &Execution) -> Vec<AuditRecord> {
    let mut out = Vec::new();
    let entry = |seq: u64| e.log.iter().find(|l| l.seq == seq);
    for d in &e.decisions {
        out.push(record(
            e,
            d.at,
            AuditEvent::of(d.kind),
            Some(d.by.to_string()),
            {
                d.seqs
                    .iter()
                    .filter_map(|s| entry(*s))
                    .map(AuditCall::of)
                    .collect()
            },
        ));
        let last = out.len() - 1;
        out[last].scope = d.scope;
        out[last].methods = d.methods.clone();
    }
    for l in &e.log {
        if l.connector == codemode::SDK_NAMESPACE
            || !matches!(l.state, EntryState::Applied | EntryState::Reverted)
        {
            continue;
        }
        let approved = l.decisions.iter().find(|d| d.kind == DecisionKind::Approve);
        let at = approved.map_or(e.created_at, |d| d.at);
        out.push(record(
            e,
            at,
            AuditEvent::Applied,
            None,
            vec![AuditCall::of(l)],
        ));
        if l.state == EntryState::Reverted {
            let revert = l
                .decisions
                .iter()
                .rfind(|d| d.kind == DecisionKind::Rollback);
            let (at, by) = revert.map_or((e.updated_at, None), |d| (d.at, Some(d.by.to_string())));
            out.push(record(
                e,
                at,
                AuditEvent::Reverted,
                by,
                vec![AuditCall::of(l)],
            ));
        }
    }
    out
}

fn record(
    e: &Execution,
    at: i64,
    event: AuditEvent,
    by: Option<String>,
    calls: Vec<AuditCall>,
) -> AuditRecord {
    AuditRecord {
        at,
        time: crate::when::rfc3339(at),
        execution_id: e.id.clone(),
        event,
        by,
        scope: None,
        methods: Vec::new(),
        calls,
    }
}

/// The records of `executions` within `range`, in time order (decisions before the calls
/// they allowed at the same instant, calls in log order).
pub fn export(executions: &[Execution], range: AuditRange) -> Vec<AuditRecord> {
    let mut out: Vec<(i64, AuditRecord)> = executions
        .iter()
        .filter(|e| e.updated_at >= range.since)
        .flat_map(|e| records_of(e).into_iter().map(|r| (e.created_at, r)))
        .filter(|(_, r)| range.contains(r.at))
        .collect();
    out.sort_by(|(ca, a), (cb, b)| {
        let seq = |r: &AuditRecord| r.calls.first().map_or(0, |c| c.seq);
        (a.at, *ca, &a.execution_id, a.event.rank(), seq(a)).cmp(&(
            b.at,
            *cb,
            &b.execution_id,
            b.event.rank(),
            seq(b),
        ))
    });
    out.into_iter().map(|(_, r)| r).collect()
}

/// The most executions one export reads; a window that touches more is refused with
/// [`AuditError::TooWide`], so an export never holds more than this many in memory.
pub const MAX_AUDIT_EXECUTIONS: usize = 500;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// More executions than [`MAX_AUDIT_EXECUTIONS`] were touched in the window.
    #[error("more than {max} executions were active between {since} and {until}: narrow the window (a later since=, an earlier until=) and export it in parts")]
    TooWide {
        /// [`MAX_AUDIT_EXECUTIONS`].
        max: usize,
        /// `since`, in RFC 3339.
        since: String,
        /// `until`, in RFC 3339 (or "now").
        until: String,
    },
    /// The store failed.
    #[error(transparent)]
    Runtime(#[from] codemode::RuntimeError),
}

/// The audit records of the runtime's store within `range`. The store reads only the
/// executions active in the window, with their decisions and applied or reverted calls
/// (no results, no console output), at most [`MAX_AUDIT_EXECUTIONS`] of them.
pub async fn collect(runtime: &Runtime, range: AuditRange) -> Result<Vec<AuditRecord>, AuditError> {
    let until = range.until.unwrap_or(i64::MAX);
    let read = runtime
        .audit_executions(range.since, until, MAX_AUDIT_EXECUTIONS + 1)
        .await?;
    if read.len() > MAX_AUDIT_EXECUTIONS {
        return Err(AuditError::TooWide {
            max: MAX_AUDIT_EXECUTIONS,
            since: crate::when::rfc3339(range.since),
            until: range.until.map_or("now".into(), crate::when::rfc3339),
        });
    }
    Ok(export(&read, range))
}

/// The records as `format`: `csv`, else JSON Lines.
pub fn render(records: &[AuditRecord], format: &str) -> String {
    match format {
        "csv" => to_csv(records),
        _ => to_jsonl(records),
    }
}

/// The records as JSON Lines: one object a line.
pub fn to_jsonl(records: &[AuditRecord]) -> String {
    records
        .iter()
        .filter_map(|r| serde_json::to_string(r).ok())
        .map(|line| line + "\n")
        .collect()
}

/// The CSV header of [`to_csv`].
pub const CSV_HEADER: &str =
    "time,at,execution_id,event,by,seq,connector,method,args,approved_args";

/// The records as CSV (RFC 4180): one row per call concerned, one row for a decision without
/// calls; arguments as JSON text.
pub fn to_csv(records: &[AuditRecord]) -> String {
    let mut out = format!("{CSV_HEADER}\r\n");
    for r in records {
        let head = [
            r.time.clone(),
            r.at.to_string(),
            r.execution_id.clone(),
            r.event.as_str().to_string(),
            r.by.clone().unwrap_or_default(),
        ];
        let rows: Vec<[String; 5]> = if r.calls.is_empty() {
            vec![Default::default()]
        } else {
            r.calls
                .iter()
                .map(|c| {
                    [
                        c.seq.to_string(),
                        c.connector.clone(),
                        c.method.clone(),
                        c.args.to_string(),
                        c.approved_args
                            .as_ref()
                            .map_or(String::new(), Value::to_string),
                    ]
                })
                .collect()
        };
        for row in rows {
            let cells: Vec<String> = head.iter().chain(row.iter()).map(|c| csv_cell(c)).collect();
            out.push_str(&cells.join(","));
            out.push_str("\r\n");
        }
    }
    out
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell(r#"{"a":1,"b":"x"}"#), r#""{""a"":1,""b"":""x""}""#);
    }

    #[test]
    fn the_range_includes_since_and_excludes_until() {
        let r = AuditRange {
            since: 10,
            until: Some(20),
        };
        assert!(r.contains(10) && r.contains(19));
        assert!(!r.contains(9) && !r.contains(20));
    }
}
