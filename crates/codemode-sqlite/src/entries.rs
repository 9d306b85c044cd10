//! Log entries: written by seq, in the caller's transaction.

use crate::codec::{json, json_decisions, seq_to_sql, Ctx};
use codemode::{LogEntry, StoreError};
use rusqlite::{params, Connection};

/// Every column is replaced, so `OR REPLACE` (delete + insert of the one row) is the upsert;
/// it measured faster than `ON CONFLICT DO UPDATE` here.
const UPSERT_ENTRY: &str = "
INSERT OR REPLACE INTO log_entries (runtime, execution_id, seq, connector, method, args, result,
                                    error, requires_approval, ephemeral, state, approved_args,
                                    decisions, delivered)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

/// Inserts or replaces log entries by seq, on one statement (looked up in the statement cache
/// once, not once per entry).
pub(crate) fn upsert_entries(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    execution_id: &str,
    entries: &[LogEntry],
) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut stmt = conn
        .prepare_cached(UPSERT_ENTRY)
        .ctx(loc, "writing a log entry")?;
    for entry in entries {
        let seq = seq_to_sql(entry.seq)?;
        let args = json(&entry.args)?;
        let result = entry.result.as_ref().map(json).transpose()?;
        let approved_args = entry.approved_args.as_ref().map(json).transpose()?;
        let decisions = json_decisions(&entry.decisions)?;
        stmt.execute(params![
            runtime,
            execution_id,
            seq,
            entry.connector,
            entry.method,
            args,
            result,
            entry.error,
            entry.requires_approval,
            entry.ephemeral,
            entry.state.as_str(),
            approved_args,
            decisions,
            entry.delivered.map(seq_to_sql).transpose()?,
        ])
        .ctx(loc, "writing a log entry")?;
    }
    Ok(())
}
