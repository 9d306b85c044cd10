//! Reads that answer a listing or an audit export: only the columns they report, so that an
//! execution's log, result and console output never leave the database for them.

use crate::codec::{json_strings, status, Ctx, RawEntry, RawExecution};
use crate::tx::Tx;
use codemode::{ExecutionStatus, ExecutionSummary, LogEntry, StoreError, CODE_PREVIEW_CHARS};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

/// A page of summaries newest first, before the place `(?3, ?4)`. Entries are counted in the
/// database; pending ones only of paused executions (no other status has any).
const SUMMARIES: &str = "
SELECT e.id, substr(e.code, 1, ?6), length(substr(e.code, 1, ?6 + 1)) > ?6, e.status,
       e.connectors, e.created_at, e.updated_at,
       (SELECT count(*) FROM log_entries l WHERE l.runtime = e.runtime AND l.execution_id = e.id),
       (SELECT count(*) FROM log_entries l WHERE l.runtime = e.runtime AND l.execution_id = e.id
          AND l.connector <> 'codemode'),
       CASE WHEN e.status = 'paused' THEN
         (SELECT count(*) FROM log_entries l WHERE l.runtime = e.runtime AND l.execution_id = e.id
            AND l.state = 'pending')
       ELSE 0 END
FROM executions e
WHERE e.runtime = ?1 AND (?2 IS NULL OR e.status = ?2) AND (e.created_at, e.pk) < (?3, ?4)
ORDER BY e.created_at DESC, e.pk DESC
LIMIT ?5";

/// A summary row as read.
type SummaryRow = (
    String,
    String,
    bool,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
);

/// At most `limit` summaries newest first, optionally of one status, after the execution
/// `before` (none when it is unknown), in one snapshot.
pub(crate) fn summaries(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    only: Option<ExecutionStatus>,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<ExecutionSummary>, StoreError> {
    let tx = Tx::read(conn, loc)?;
    let (created_at, pk) = match before {
        None => (i64::MAX, i64::MAX),
        Some(id) => {
            let place: Option<(i64, i64)> = tx
                .prepare_cached(
                    "SELECT created_at, pk FROM executions WHERE runtime = ?1 AND id = ?2",
                )
                .and_then(|mut s| {
                    s.query_row(params![runtime, id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                })
                .ctx(loc, "finding a listing's cursor")?;
            match place {
                Some(place) => place,
                None => return Ok(Vec::new()),
            }
        }
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let preview = i64::try_from(CODE_PREVIEW_CHARS).unwrap_or(i64::MAX);
    let rows: Vec<SummaryRow> = tx
        .prepare_cached(SUMMARIES)
        .and_then(|mut s| {
            s.query_map(
                params![
                    runtime,
                    only.map(|s| s.as_str()),
                    created_at,
                    pk,
                    limit,
                    preview
                ],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                    ))
                },
            )?
            .collect()
        })
        .ctx(loc, "listing executions")?;
    tx.commit(loc)?;
    rows.into_iter().map(decode_summary).collect()
}

fn decode_summary(row: SummaryRow) -> Result<ExecutionSummary, StoreError> {
    let (id, code, code_cut, found, connectors, created_at, updated_at, entries, calls, pending) =
        row;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(ExecutionSummary {
        status: status(&found)?,
        connectors: serde_json::from_str(&connectors)
            .map_err(|e| StoreError::Decode(format!("execution {id} connectors: {e}")))?,
        id,
        code,
        code_cut,
        created_at,
        updated_at,
        entries: count(entries),
        calls: count(calls),
        pending: count(pending),
    })
}

/// The columns of `RawExecution` with the code, result, error and console output left out.
const AUDIT_EXECUTIONS: &str = "
SELECT id, '', status, NULL, NULL, '[]', connectors, created_at, updated_at, decisions,
       traceparent, NULL
FROM executions
WHERE runtime = ?1 AND created_at < ?3 AND updated_at >= ?2
ORDER BY created_at, pk
LIMIT ?4";

/// The columns of `RawEntry` with the result and error left out, of applied and reverted
/// entries and those a decision concerned only.
const AUDIT_ENTRIES: &str = "
SELECT execution_id, seq, connector, method, args, NULL, NULL, requires_approval, ephemeral,
       state, approved_args, decisions, delivered, read_only
FROM log_entries
WHERE runtime = ?1 AND execution_id IN (SELECT value FROM json_each(?2))
  AND (state = 'applied' OR state = 'reverted' OR decisions IS NOT NULL)
ORDER BY execution_id, seq";

/// What an audit export of `[since_ms, until_ms)` reads, live executions and archived
/// records merged: see `Store::audit_executions`.
pub(crate) fn audit(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    since_ms: i64,
    until_ms: i64,
    limit: usize,
) -> Result<Vec<codemode::Execution>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let tx = Tx::read(conn, loc)?;
    let rows: Vec<RawExecution> = tx
        .prepare_cached(AUDIT_EXECUTIONS)
        .and_then(|mut s| {
            s.query_map(params![runtime, since_ms, until_ms, limit], |r| {
                RawExecution::read(r, 0)
            })?
            .collect()
        })
        .ctx(loc, "reading executions for an audit export")?;
    let archived = crate::archive::window(&tx, loc, runtime, since_ms, until_ms, limit)?;
    if rows.is_empty() {
        tx.commit(loc)?;
        return Ok(archived);
    }
    let index: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let ids = json_strings(&rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>())?;
    let entries: Vec<(String, RawEntry)> = tx
        .prepare_cached(AUDIT_ENTRIES)
        .and_then(|mut s| {
            s.query_map(params![runtime, ids], |r| {
                Ok((r.get(0)?, RawEntry::read(r, 1)?))
            })?
            .collect()
        })
        .ctx(
            loc,
            "reading applied and reverted calls for an audit export",
        )?;
    tx.commit(loc)?;
    let mut logs: Vec<Vec<LogEntry>> = vec![Vec::new(); rows.len()];
    for (id, raw) in entries {
        if let Some(&i) = index.get(id.as_str()) {
            logs[i].push(raw.decode()?);
        }
    }
    let live = rows
        .into_iter()
        .zip(logs)
        .map(|(raw, log)| raw.decode(log))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(codemode::store::merge_audit_records(
        live,
        archived,
        usize::try_from(limit).unwrap_or(usize::MAX),
    ))
}
