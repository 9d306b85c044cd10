//! The hot path: [`commit`] (entries plus a status change, as one CAS) and [`claim`].

use crate::codec::{json, json_strings, seq_to_sql, Ctx};
use crate::executions::read_in;
use crate::tx::Tx;
use codemode::{
    check_transition, Claim, Commit, Execution, ExecutionStatus, Lease, LogEntry, StoreError,
    Transition,
};
use rusqlite::{params, Connection};

/// Every column is replaced, so `OR REPLACE` (delete + insert of the one row) is the upsert;
/// it measured faster than `ON CONFLICT DO UPDATE` here.
const UPSERT_ENTRY: &str = "
INSERT OR REPLACE INTO log_entries (runtime, execution_id, seq, connector, method, args, result,
                                    error, requires_approval, ephemeral, state)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// The status CAS and the change itself in one statement. `?9` is the lease owner the caller
/// must still be (NULL: no owner condition); `?10` clears the lease when leaving `running`.
/// `result`, `error` and `logs` left as NULL keep their recorded values.
const TRANSITION: &str = "
UPDATE executions SET
    status = ?4,
    result = COALESCE(?5, result),
    error = COALESCE(?6, error),
    logs = COALESCE(?7, logs),
    updated_at = ?8,
    lease_owner = CASE WHEN ?10 THEN NULL ELSE lease_owner END,
    lease_until_ms = CASE WHEN ?10 THEN NULL ELSE lease_until_ms END
WHERE runtime = ?1 AND id = ?2 AND status = ?3
  AND (?9 IS NULL OR (status = 'running' AND lease_owner = ?9))";

const HOLDS_LEASE: &str = "
SELECT 1 FROM executions
WHERE runtime = ?1 AND id = ?2 AND status = 'running' AND lease_owner = ?3";

const EXISTS: &str = "SELECT 1 FROM executions WHERE runtime = ?1 AND id = ?2";

const CLAIM: &str = "
UPDATE executions SET status = 'running', lease_owner = ?4, lease_until_ms = ?5, updated_at = ?6
WHERE runtime = ?1 AND id = ?2 AND status = ?3
  AND (status <> 'running' OR lease_until_ms IS NULL OR lease_until_ms < ?6)";

/// Applies `commit` in one `BEGIN IMMEDIATE` transaction: the CAS first, then the entries.
pub(crate) fn commit(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    commit: &Commit,
) -> Result<bool, StoreError> {
    if let Some(t) = &commit.transition {
        check_transition(t.from, t.to)?;
    }
    let tx = Tx::write(conn, loc)?;
    let id = commit.execution_id.as_str();
    let holds = match (&commit.transition, &commit.owner) {
        (Some(t), owner) => transition(&tx, loc, runtime, id, t, owner.as_deref())?,
        (None, Some(owner)) => tx
            .prepare_cached(HOLDS_LEASE)
            .and_then(|mut s| s.exists(params![runtime, id, owner]))
            .ctx(loc, "checking the lease")?,
        (None, None) => tx
            .prepare_cached(EXISTS)
            .and_then(|mut s| s.exists(params![runtime, id]))
            .ctx(loc, "finding the execution")?,
    };
    if !holds {
        // Dropping the transaction rolls it back: nothing was written.
        return Ok(false);
    }
    upsert_entries(&tx, loc, runtime, id, &commit.entries)?;
    tx.commit(loc)?;
    Ok(true)
}

fn transition(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    t: &Transition,
    owner: Option<&str>,
) -> Result<bool, StoreError> {
    let result = t.result.as_ref().map(json).transpose()?;
    let logs = t.logs.as_deref().map(json_strings).transpose()?;
    let leaves_running = t.from == ExecutionStatus::Running && t.to != ExecutionStatus::Running;
    let changed = conn
        .prepare_cached(TRANSITION)
        .and_then(|mut s| {
            s.execute(params![
                runtime,
                id,
                t.from.as_str(),
                t.to.as_str(),
                result,
                t.error,
                logs,
                t.at_ms,
                owner,
                leaves_running,
            ])
        })
        .ctx(loc, "changing the status")?;
    Ok(changed == 1)
}

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
        ])
        .ctx(loc, "writing a log entry")?;
    }
    Ok(())
}

/// Reads the execution and moves it from `from` to `running` under `lease`, in one
/// `BEGIN IMMEDIATE` transaction; from `running` only once the old lease expired, and only
/// when every connector it recorded is `available`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn claim(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    lease: &Lease,
    now_ms: i64,
    available: &[String],
) -> Result<Claim, StoreError> {
    check_transition(from, ExecutionStatus::Running)?;
    let tx = Tx::write(conn, loc)?;
    let Some(found) = read_in(&tx, loc, runtime, id)? else {
        return Ok(Claim::Unknown);
    };
    if !found.connectors.iter().all(|c| available.contains(c)) {
        return Ok(Claim::Refused(found));
    }
    let changed = tx
        .prepare_cached(CLAIM)
        .and_then(|mut s| {
            s.execute(params![
                runtime,
                id,
                from.as_str(),
                lease.owner,
                lease.until_ms,
                now_ms
            ])
        })
        .ctx(loc, "claiming an execution")?;
    if changed != 1 {
        return Ok(Claim::Refused(found));
    }
    tx.commit(loc)?;
    Ok(Claim::Won(Execution {
        status: ExecutionStatus::Running,
        updated_at: now_ms,
        ..found
    }))
}
