//! The audit archive: the audit record of each pruned or deleted execution (what an audit
//! export reads of it, as JSON), written in the transaction that removes the execution and
//! kept until it is older than the store's audit retention.

use crate::codec::{Ctx, RawEntry, RawExecution};
use codemode::{Execution, StoreError};
use rusqlite::{params, Connection, OptionalExtension};

/// The execution as an audit export reads it: see `listing::AUDIT_EXECUTIONS`.
const AUDIT_EXECUTION: &str = "
SELECT id, '', status, NULL, NULL, '[]', connectors, created_at, updated_at, decisions,
       traceparent, NULL
FROM executions
WHERE runtime = ?1 AND id = ?2";

/// Its entries as an audit export reads them: see `listing::AUDIT_ENTRIES`.
const AUDIT_ENTRIES: &str = "
SELECT seq, connector, method, args, NULL, NULL, requires_approval, ephemeral, state,
       approved_args, decisions, delivered, read_only
FROM log_entries
WHERE runtime = ?1 AND execution_id = ?2
  AND (state = 'applied' OR state = 'reverted' OR decisions IS NOT NULL)
ORDER BY seq";

const INSERT: &str = "
INSERT OR REPLACE INTO audit_archive (runtime, id, created_at, updated_at, record)
VALUES (?1, ?2, ?3, ?4, ?5)";

/// Archive rows in the window `[?2, ?3)` (updated at or after `?2`, created before `?3`),
/// oldest first, at most `?4`.
const WINDOW: &str = "
SELECT record FROM audit_archive
WHERE runtime = ?1 AND created_at < ?3 AND updated_at >= ?2
ORDER BY created_at, id
LIMIT ?4";

const EXPIRE: &str = "DELETE FROM audit_archive WHERE runtime = ?1 AND updated_at < ?2";

/// Copies the audit record of the execution `id` into the archive, inside the caller's
/// transaction, before the execution is removed; nothing when it does not exist.
pub(crate) fn archive(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
) -> Result<(), StoreError> {
    let raw = conn
        .prepare_cached(AUDIT_EXECUTION)
        .and_then(|mut s| {
            s.query_row(params![runtime, id], |r| RawExecution::read(r, 0))
                .optional()
        })
        .ctx(loc, "reading an execution to archive its audit record")?;
    let Some(raw) = raw else {
        return Ok(());
    };
    let entries: Vec<RawEntry> = conn
        .prepare_cached(AUDIT_ENTRIES)
        .and_then(|mut s| {
            s.query_map(params![runtime, id], |r| RawEntry::read(r, 0))?
                .collect()
        })
        .ctx(loc, "reading the calls of an execution to archive")?;
    let log = entries
        .into_iter()
        .map(RawEntry::decode)
        .collect::<Result<Vec<_>, _>>()?;
    let execution = raw.decode(log)?;
    let record = serde_json::to_string(&execution)
        .map_err(|e| StoreError::Backend(format!("encoding the audit record of {id}: {e}")))?;
    conn.prepare_cached(INSERT)
        .and_then(|mut s| {
            s.execute(params![
                runtime,
                id,
                execution.created_at,
                execution.updated_at,
                record
            ])
        })
        .ctx(loc, "archiving an audit record")?;
    Ok(())
}

/// Deletes the archive rows of `runtime` last updated before `before_ms`; returns how many.
pub(crate) fn expire(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    before_ms: i64,
) -> Result<usize, StoreError> {
    conn.prepare_cached(EXPIRE)
        .and_then(|mut s| s.execute(params![runtime, before_ms]))
        .ctx(loc, "deleting expired audit records")
}

/// The archived audit records in the window, oldest first, at most `limit`.
pub(crate) fn window(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    since_ms: i64,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<Execution>, StoreError> {
    let records: Vec<String> = conn
        .prepare_cached(WINDOW)
        .and_then(|mut s| {
            s.query_map(params![runtime, since_ms, until_ms, limit], |r| r.get(0))?
                .collect()
        })
        .ctx(loc, "reading archived audit records")?;
    records
        .iter()
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|e| StoreError::Decode(format!("an archived audit record: {e}")))
        })
        .collect()
}
