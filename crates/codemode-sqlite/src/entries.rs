//! Log entries: written by seq, in the caller's transaction.

use crate::codec::{json, json_decisions, seq_to_sql, Ctx};
use codemode::{LogEntry, StoreError};
use rusqlite::{params, Connection};

/// Every column is replaced, so `OR REPLACE` (delete + insert of the one row) is the upsert;
/// it measured faster than `ON CONFLICT DO UPDATE` here.
const UPSERT_ENTRY: &str = "
INSERT OR REPLACE INTO log_entries (runtime, execution_id, seq, connector, method, args, result,
                                    error, requires_approval, ephemeral, state, approved_args,
                                    decisions, delivered, read_only)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// A log entry with its JSON encoded, ready to bind: encoding runs on the caller's thread,
/// so the writer thread only binds text (and allocates little of its own).
pub(crate) struct Encoded {
    seq: i64,
    connector: String,
    method: String,
    args: String,
    result: Option<String>,
    error: Option<String>,
    requires_approval: bool,
    ephemeral: bool,
    state: &'static str,
    approved_args: Option<String>,
    decisions: Option<String>,
    delivered: Option<i64>,
    read_only: bool,
}

/// Encodes entries for [`upsert_entries`].
pub(crate) fn encode(entries: &[LogEntry]) -> Result<Vec<Encoded>, StoreError> {
    entries
        .iter()
        .map(|entry| {
            Ok(Encoded {
                seq: seq_to_sql(entry.seq)?,
                connector: entry.connector.clone(),
                method: entry.method.clone(),
                args: json(&entry.args)?,
                result: entry.result.as_ref().map(json).transpose()?,
                error: entry.error.clone(),
                requires_approval: entry.requires_approval,
                ephemeral: entry.ephemeral,
                state: entry.state.as_str(),
                approved_args: entry.approved_args.as_ref().map(json).transpose()?,
                decisions: json_decisions(&entry.decisions)?,
                delivered: entry.delivered.map(seq_to_sql).transpose()?,
                read_only: entry.read_only,
            })
        })
        .collect()
}

/// Inserts or replaces log entries by seq, on one statement (looked up in the statement cache
/// once, not once per entry).
pub(crate) fn upsert_entries(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    execution_id: &str,
    entries: &[Encoded],
) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut stmt = conn
        .prepare_cached(UPSERT_ENTRY)
        .ctx(loc, "writing a log entry")?;
    for e in entries {
        stmt.execute(params![
            runtime,
            execution_id,
            e.seq,
            e.connector,
            e.method,
            e.args,
            e.result,
            e.error,
            e.requires_approval,
            e.ephemeral,
            e.state,
            e.approved_args,
            e.decisions,
            e.delivered,
            e.read_only,
        ])
        .ctx(loc, "writing a log entry")?;
    }
    Ok(())
}
