//! Executions: insert with retention, reads with their logs, delete, prune, stale, pending.

use crate::codec::{
    json, json_strings, status, Ctx, RawEntry, RawExecution, ENTRY_COLUMNS, EXECUTION_COLUMNS,
};
use crate::entries;
use crate::tx::Tx;
use codemode::{Deletion, Execution, ExecutionStatus, Lease, LogEntry, PendingAction, StoreError};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

const INSERT: &str = "
INSERT INTO executions (runtime, id, code, status, result, error, logs, connectors,
                        created_at, updated_at, lease_owner, lease_until_ms, decisions,
                        traceparent)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

/// Terminal executions past the newest `?2`, newest first (insertion order breaks ties).
/// Its condition is the terminal index's, word for word, so that SQLite uses that index.
const BEYOND_KEEP: &str = "
SELECT id FROM executions
WHERE runtime = ?1
  AND (status = 'completed' OR status = 'error' OR status = 'rejected'
       OR status = 'rolled_back' OR status = 'cancelled')
ORDER BY created_at DESC, pk DESC
LIMIT -1 OFFSET ?2";

const DELETE_ENTRIES: &str = "DELETE FROM log_entries WHERE runtime = ?1 AND execution_id = ?2";
const DELETE_EXECUTION: &str = "DELETE FROM executions WHERE runtime = ?1 AND id = ?2";
/// Undo records of the execution's workspace changes (execution ids are UUIDs, unique
/// across runtimes; workspaces belong to no runtime).
const DELETE_FILE_UNDO: &str = "DELETE FROM workspace_changes WHERE execution_id = ?1";

/// Whether an execution holds a write still applied (one that needed approval, or any call
/// to a tool that is not read-only) and was updated at or after `?3`: pruning keeps it (for
/// its audit and its rollback) until it is older.
const PROTECTED: &str = "
SELECT EXISTS (
    SELECT 1 FROM executions e
    WHERE e.runtime = ?1 AND e.id = ?2 AND e.updated_at >= ?3 AND e.status <> 'rolled_back'
      AND EXISTS (SELECT 1 FROM log_entries l
                  WHERE l.runtime = ?1 AND l.execution_id = ?2
                    AND l.state = 'applied'
                    AND (l.requires_approval = 1 OR l.read_only = 0)))";

/// Inserts a running execution (and any entries it carries), then prunes beyond `keep`
/// (keeping applied writes updated at or after `protect_since_ms`, and archived audit
/// records updated at or after `audit_since_ms`).
pub(crate) fn insert(
    tx: &Connection,
    loc: &str,
    runtime: &str,
    execution: &Execution,
    lease: &Lease,
    (keep, protect_since_ms, audit_since_ms): (usize, i64, i64),
) -> Result<usize, StoreError> {
    let result = execution.result.as_ref().map(json).transpose()?;
    let logs = json_strings(&execution.logs)?;
    let connectors = json_strings(&execution.connectors)?;
    let decisions = crate::codec::json_decisions(&execution.decisions)?;
    let running = execution.status == ExecutionStatus::Running;
    let inserted = tx.prepare_cached(INSERT).and_then(|mut s| {
        s.execute(params![
            runtime,
            execution.id,
            execution.code,
            execution.status.as_str(),
            result,
            execution.error,
            logs,
            connectors,
            execution.created_at,
            execution.updated_at,
            running.then_some(lease.owner.as_str()),
            running.then_some(lease.until_ms),
            decisions,
            execution.traceparent,
        ])
    });
    match inserted {
        Err(e) if crate::codec::is_constraint(&e) => {
            return Err(StoreError::Backend(format!(
                "execution {} already exists in runtime {runtime:?} ({loc})",
                execution.id
            )))
        }
        other => other.ctx(loc, "inserting an execution")?,
    };
    entries::upsert_entries(
        tx,
        loc,
        runtime,
        &execution.id,
        &entries::encode(&execution.log)?,
    )?;
    prune(tx, loc, runtime, keep, protect_since_ms, audit_since_ms)
}

/// Deletes terminal executions beyond the newest `keep`, except those holding an approved
/// write still applied that were updated at or after `protect_since_ms`, archiving their
/// audit records; first deletes archived records last updated before `audit_since_ms`.
pub(crate) fn prune(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    keep: usize,
    protect_since_ms: i64,
    audit_since_ms: i64,
) -> Result<usize, StoreError> {
    crate::archive::expire(conn, loc, runtime, audit_since_ms)?;
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    if keep == i64::MAX {
        // Retention is off: skipping that many rows would walk every terminal execution.
        return Ok(0);
    }
    let ids: Vec<String> = conn
        .prepare_cached(BEYOND_KEEP)
        .and_then(|mut s| s.query_map(params![runtime, keep], |r| r.get(0))?.collect())
        .ctx(loc, "finding executions to prune")?;
    let mut pruned = 0;
    for id in &ids {
        let protected: bool = conn
            .prepare_cached(PROTECTED)
            .and_then(|mut s| s.query_row(params![runtime, id, protect_since_ms], |r| r.get(0)))
            .ctx(loc, "checking an execution's applied writes")?;
        if !protected {
            remove(conn, loc, runtime, id)?;
            pruned += 1;
        }
    }
    Ok(pruned)
}

/// Archives the execution's audit record, then deletes it, its log and its undo records.
fn remove(conn: &Connection, loc: &str, runtime: &str, id: &str) -> Result<(), StoreError> {
    crate::archive::archive(conn, loc, runtime, id)?;
    conn.prepare_cached(DELETE_ENTRIES)
        .and_then(|mut s| s.execute(params![runtime, id]))
        .ctx(loc, "deleting log entries")?;
    conn.prepare_cached(DELETE_EXECUTION)
        .and_then(|mut s| s.execute(params![runtime, id]))
        .ctx(loc, "deleting an execution")?;
    conn.prepare_cached(DELETE_FILE_UNDO)
        .and_then(|mut s| s.execute(params![id]))
        .ctx(loc, "deleting workspace undo records")?;
    Ok(())
}

/// Deletes one terminal execution and its log unless a lease live at `now_ms` holds it.
pub(crate) fn delete(
    tx: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    now_ms: i64,
) -> Result<Deletion, StoreError> {
    let found: Option<(String, Option<i64>)> = tx
        .prepare_cached(
            "SELECT status, lease_until_ms FROM executions WHERE runtime = ?1 AND id = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![runtime, id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .ctx(loc, "reading an execution")?;
    let Some((found, lease_until)) = found else {
        return Ok(Deletion::Unknown);
    };
    let found = status(&found)?;
    if !found.is_terminal() || lease_until.is_some_and(|until| until >= now_ms) {
        return Ok(Deletion::Refused(found));
    }
    remove(tx, loc, runtime, id)?;
    Ok(Deletion::Deleted(found))
}

/// One execution with its log, read in one snapshot.
pub(crate) fn get(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    id: &str,
) -> Result<Option<Execution>, StoreError> {
    let tx = Tx::read(conn, loc)?;
    let found = read_in(&tx, loc, runtime, id)?;
    tx.commit(loc)?;
    Ok(found)
}

/// One execution with its log, read inside the caller's transaction.
pub(crate) fn read_in(
    tx: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
) -> Result<Option<Execution>, StoreError> {
    let raw = tx
        .prepare_cached(&format!(
            "SELECT {EXECUTION_COLUMNS} FROM executions WHERE runtime = ?1 AND id = ?2"
        ))
        .and_then(|mut s| {
            s.query_row(params![runtime, id], |r| RawExecution::read(r, 0))
                .optional()
        })
        .ctx(loc, "reading an execution")?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let entries: Vec<RawEntry> = tx
        .prepare_cached(&format!(
            "SELECT {ENTRY_COLUMNS} FROM log_entries
             WHERE runtime = ?1 AND execution_id = ?2 ORDER BY seq"
        ))
        .and_then(|mut s| {
            s.query_map(params![runtime, id], |r| RawEntry::read(r, 0))?
                .collect()
        })
        .ctx(loc, "reading a log")?;
    let log = entries
        .into_iter()
        .map(RawEntry::decode)
        .collect::<Result<Vec<_>, _>>()?;
    raw.decode(log).map(Some)
}

/// Executions newest first with their logs: one query for the rows, one for all their logs.
pub(crate) fn list(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    limit: Option<usize>,
    only: Option<ExecutionStatus>,
) -> Result<Vec<Execution>, StoreError> {
    let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    let tx = Tx::read(conn, loc)?;
    let rows: Vec<RawExecution> = tx
        .prepare_cached(&format!(
            "SELECT {EXECUTION_COLUMNS} FROM executions
             WHERE runtime = ?1 AND (?2 IS NULL OR status = ?2)
             ORDER BY created_at DESC, pk DESC LIMIT ?3"
        ))
        .and_then(|mut s| {
            s.query_map(params![runtime, only.map(|s| s.as_str()), limit], |r| {
                RawExecution::read(r, 0)
            })?
            .collect()
        })
        .ctx(loc, "listing executions")?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let index: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let ids = json_strings(&rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>())?;
    let entries: Vec<(String, RawEntry)> = tx
        .prepare_cached(&format!(
            "SELECT execution_id, {ENTRY_COLUMNS} FROM log_entries
             WHERE runtime = ?1 AND execution_id IN (SELECT value FROM json_each(?2))
             ORDER BY execution_id, seq"
        ))
        .and_then(|mut s| {
            s.query_map(params![runtime, ids], |r| {
                Ok((r.get(0)?, RawEntry::read(r, 1)?))
            })?
            .collect()
        })
        .ctx(loc, "reading logs")?;
    tx.commit(loc)?;
    let mut logs: Vec<Vec<LogEntry>> = vec![Vec::new(); rows.len()];
    for (id, raw) in entries {
        if let Some(&i) = index.get(id.as_str()) {
            logs[i].push(raw.decode()?);
        }
    }
    rows.into_iter()
        .zip(logs)
        .map(|(raw, log)| raw.decode(log))
        .collect()
}

/// Paused ones last updated before `before_ms`; running ones too once their lease expired.
pub(crate) fn stale(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    before_ms: i64,
    now_ms: i64,
) -> Result<Vec<(String, ExecutionStatus)>, StoreError> {
    let rows: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT id, status FROM executions
             WHERE runtime = ?1 AND updated_at < ?2
               AND (status = 'paused' OR (status = 'running'
                    AND (lease_until_ms IS NULL OR lease_until_ms < ?3)))
             ORDER BY created_at, pk",
        )
        .and_then(|mut s| {
            s.query_map(params![runtime, before_ms, now_ms], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect()
        })
        .ctx(loc, "finding stale executions")?;
    rows.into_iter()
        .map(|(id, s)| Ok((id, status(&s)?)))
        .collect()
}

/// Pending entries of paused executions, newest execution first, each in seq order.
pub(crate) fn pending(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    id: Option<&str>,
) -> Result<Vec<PendingAction>, StoreError> {
    let rows: Vec<PendingRow> = conn
        .prepare_cached(
            "SELECT l.execution_id, l.seq, l.connector, l.method, l.args
             FROM executions e JOIN log_entries l
               ON l.runtime = e.runtime AND l.execution_id = e.id
             WHERE e.runtime = ?1 AND e.status = 'paused' AND l.state = 'pending'
               AND (?2 IS NULL OR e.id = ?2)
             ORDER BY e.created_at DESC, e.pk DESC, l.seq",
        )
        .and_then(|mut s| {
            s.query_map(params![runtime, id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })
        .ctx(loc, "listing pending actions")?;
    decode_pending(rows)
}

/// Pending actions as read: execution id, seq, connector, method, args.
type PendingRow = (String, i64, String, String, String);

/// One page of pending actions in the order of [`pending`], from just after the action `after`
/// (found by its execution's place, whatever that execution's status now), in one snapshot.
pub(crate) fn pending_page(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    after: Option<(&str, u64)>,
    limit: usize,
) -> Result<Vec<PendingAction>, StoreError> {
    let tx = Tx::read(conn, loc)?;
    let (created_at, pk, seq) = match after {
        None => (i64::MAX, i64::MAX, -1),
        Some((id, seq)) => {
            let place: Option<(i64, i64)> = tx
                .prepare_cached(
                    "SELECT created_at, pk FROM executions WHERE runtime = ?1 AND id = ?2",
                )
                .and_then(|mut s| {
                    s.query_row(params![runtime, id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                })
                .ctx(loc, "finding a pending page's cursor")?;
            let Some((created_at, pk)) = place else {
                return Ok(Vec::new());
            };
            (created_at, pk, crate::codec::seq_to_sql(seq)?)
        }
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows: Vec<PendingRow> = tx
        .prepare_cached(PENDING_PAGE)
        .and_then(|mut s| {
            s.query_map(params![runtime, created_at, pk, seq, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })
        .ctx(loc, "listing pending actions")?;
    tx.commit(loc)?;
    decode_pending(rows)
}

/// A page of pending actions: paused executions at or before the cursor's place (`?2`,
/// `?3`) on the index of paused executions, and of the cursor's own only seqs past `?4`.
const PENDING_PAGE: &str = "
SELECT l.execution_id, l.seq, l.connector, l.method, l.args
FROM executions e JOIN log_entries l
  ON l.runtime = e.runtime AND l.execution_id = e.id
WHERE e.runtime = ?1 AND e.status = 'paused' AND l.state = 'pending'
  AND (e.created_at, e.pk) <= (?2, ?3) AND (e.pk <> ?3 OR l.seq > ?4)
ORDER BY e.created_at DESC, e.pk DESC, l.seq
LIMIT ?5";

fn decode_pending(rows: Vec<PendingRow>) -> Result<Vec<PendingAction>, StoreError> {
    rows.into_iter()
        .map(|(execution_id, seq, connector, method, args)| {
            Ok(PendingAction {
                seq: u64::try_from(seq)
                    .map_err(|_| StoreError::Decode(format!("negative seq {seq}")))?,
                args: serde_json::from_str(&args).map_err(|e| {
                    StoreError::Decode(format!("execution {execution_id} seq {seq} args: {e}"))
                })?,
                execution_id,
                connector,
                method,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::BEYOND_KEEP;

    /// The prune on every insert walks the index of terminal executions, not every execution.
    #[test]
    fn the_prune_query_uses_the_index_of_terminal_executions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.db");
        let loc = path.display().to_string();
        let conn = crate::open::open(&path, &loc, &crate::SqliteOptions::default()).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {BEYOND_KEEP}"))
            .unwrap()
            .query_map(rusqlite::params!["default", 50], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let plan = plan.join("; ");
        assert!(plan.contains("USING INDEX executions_terminal"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "the prune sorts: {plan}");
    }

    /// A page of pending actions starts at its place on the index of paused executions.
    #[test]
    fn a_pending_page_seeks_on_the_index_of_paused_executions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.db");
        let loc = path.display().to_string();
        let conn = crate::open::open(&path, &loc, &crate::SqliteOptions::default()).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::PENDING_PAGE))
            .unwrap()
            .query_map(rusqlite::params!["default", 5, 5, 1, 50], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let plan = plan.join("; ");
        println!("{plan}");
        assert!(plan.contains("USING INDEX executions_paused"), "{plan}");
    }
}
