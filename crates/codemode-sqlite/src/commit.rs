//! The hot path: [`commit`] (entries plus a status change, as one CAS) and [`claim`].

use crate::codec::{json, json_decision, json_strings, Ctx};
use crate::entries;
use crate::executions::read_in;
use codemode::{
    check_transition, Claim, Commit, Execution, ExecutionStatus, Lease, StoreError, Transition,
};
use rusqlite::{params, Connection};

/// The status CAS and the change itself in one statement. `?9` is the lease owner the caller
/// must still be (NULL: no owner, and then no lease may be live at `?8`, unless the change
/// is a cancel, which takes the run from its pass); `?10` drops the lease (any status but
/// `running`); `?11` is a decision to append. `result`, `error` and `logs` left as NULL keep
/// their recorded values.
const TRANSITION: &str = "
UPDATE executions SET
    status = ?4,
    result = COALESCE(?5, result),
    error = COALESCE(?6, error),
    logs = COALESCE(?7, logs),
    updated_at = ?8,
    lease_owner = CASE WHEN ?10 THEN NULL ELSE lease_owner END,
    lease_until_ms = CASE WHEN ?10 THEN NULL ELSE lease_until_ms END,
    decisions = CASE WHEN ?11 IS NULL THEN decisions
                     ELSE json_insert(COALESCE(decisions, '[]'), '$[#]', json(?11)) END
WHERE runtime = ?1 AND id = ?2 AND status = ?3
  AND (CASE WHEN ?9 IS NULL THEN lease_until_ms IS NULL OR lease_until_ms < ?8
                                 OR (?3 = 'running' AND ?4 = 'cancelled')
            ELSE lease_owner = ?9 END)";

const HOLDS_LEASE: &str = "
SELECT 1 FROM executions WHERE runtime = ?1 AND id = ?2 AND lease_owner = ?3";

/// The execution's clock tape, replaced (in the commit's transaction, once its CAS held).
const SET_CLOCK: &str = "UPDATE executions SET clock = ?3 WHERE runtime = ?1 AND id = ?2";

const EXISTS: &str = "SELECT 1 FROM executions WHERE runtime = ?1 AND id = ?2";

const CLAIM: &str = "
UPDATE executions SET status = 'running', lease_owner = ?4, lease_until_ms = ?5, updated_at = ?6
WHERE runtime = ?1 AND id = ?2 AND status = ?3
  AND (lease_until_ms IS NULL OR lease_until_ms < ?6)";

/// A decision's lease on an execution that is not running; its status stays.
const HOLD: &str = "
UPDATE executions SET lease_owner = ?4, lease_until_ms = ?5
WHERE runtime = ?1 AND id = ?2 AND status = ?3 AND status <> 'running'
  AND (lease_until_ms IS NULL OR lease_until_ms < ?6)";

const RELEASE: &str = "
UPDATE executions SET lease_owner = NULL, lease_until_ms = NULL
WHERE runtime = ?1 AND id = ?2 AND lease_owner = ?3 AND status <> 'running'";

/// A [`Commit`] encoded on the caller's thread for [`commit`].
pub(crate) struct Encoded {
    execution_id: String,
    owner: Option<String>,
    entries: Vec<entries::Encoded>,
    transition: Option<EncodedTransition>,
    /// The clock tape's JSON, when the commit changes it.
    clock: Option<Option<String>>,
}

struct EncodedTransition {
    from: &'static str,
    to: &'static str,
    result: Option<String>,
    error: Option<String>,
    logs: Option<String>,
    at_ms: i64,
    drops_lease: bool,
    decision: Option<String>,
}

/// Checks the transition and encodes `commit`'s JSON, before it is sent to the writer.
pub(crate) fn encode(commit: &Commit) -> Result<Encoded, StoreError> {
    let transition = match &commit.transition {
        None => None,
        Some(t) => {
            check_transition(t.from, t.to)?;
            Some(encode_transition(t)?)
        }
    };
    Ok(Encoded {
        execution_id: commit.execution_id.clone(),
        owner: commit.owner.clone(),
        entries: entries::encode(&commit.entries)?,
        transition,
        clock: commit.clock.as_ref().map(codemode::ClockTape::to_json),
    })
}

fn encode_transition(t: &Transition) -> Result<EncodedTransition, StoreError> {
    Ok(EncodedTransition {
        from: t.from.as_str(),
        to: t.to.as_str(),
        result: t.result.as_ref().map(json).transpose()?,
        error: t.error.clone(),
        logs: t.logs.as_deref().map(json_strings).transpose()?,
        at_ms: t.at_ms,
        drops_lease: t.to != ExecutionStatus::Running,
        decision: t.decision.as_ref().map(json_decision).transpose()?,
    })
}

/// Applies an encoded commit inside the writer's transaction: the CAS first, then the
/// entries. A refused CAS writes nothing.
pub(crate) fn commit(
    tx: &Connection,
    loc: &str,
    runtime: &str,
    commit: &Encoded,
) -> Result<bool, StoreError> {
    let id = commit.execution_id.as_str();
    let holds = match (&commit.transition, &commit.owner) {
        (Some(t), owner) => transition(tx, loc, runtime, id, t, owner.as_deref())?,
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
        return Ok(false);
    }
    entries::upsert_entries(tx, loc, runtime, id, &commit.entries)?;
    if let Some(clock) = &commit.clock {
        tx.prepare_cached(SET_CLOCK)
            .and_then(|mut s| s.execute(params![runtime, id, clock]))
            .ctx(loc, "recording the clock tape")?;
    }
    Ok(true)
}

fn transition(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    t: &EncodedTransition,
    owner: Option<&str>,
) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(TRANSITION)
        .and_then(|mut s| {
            s.execute(params![
                runtime,
                id,
                t.from,
                t.to,
                t.result,
                t.error,
                t.logs,
                t.at_ms,
                owner,
                t.drops_lease,
                t.decision,
            ])
        })
        .ctx(loc, "changing the status")?;
    Ok(changed == 1)
}

/// Reads the execution and moves it from `from` to `running` under `lease`, in the writer's
/// transaction; from `running` only once the old lease expired, and only
/// when every connector it recorded is `available`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn claim(
    tx: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    lease: &Lease,
    now_ms: i64,
    available: &[String],
) -> Result<Claim, StoreError> {
    check_transition(from, ExecutionStatus::Running)?;
    let Some(found) = read_in(tx, loc, runtime, id)? else {
        return Ok(Claim::Unknown);
    };
    if !found.connectors.iter().all(|c| available.contains(c)) {
        return Ok(Claim::Refused(found));
    }
    let args = (runtime, id, from, lease, now_ms);
    if !take_lease(tx, loc, CLAIM, "claiming an execution", args)? {
        return Ok(Claim::Refused(found));
    }
    Ok(Claim::Won(Execution {
        status: ExecutionStatus::Running,
        updated_at: now_ms,
        ..found
    }))
}

/// Takes a decision's `lease` on an execution in `from` (not running), reading it in the
/// writer's same transaction; refused while another lease is live.
pub(crate) fn hold(
    tx: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    lease: &Lease,
    now_ms: i64,
) -> Result<Claim, StoreError> {
    let Some(found) = read_in(tx, loc, runtime, id)? else {
        return Ok(Claim::Unknown);
    };
    let args = (runtime, id, from, lease, now_ms);
    if !take_lease(tx, loc, HOLD, "holding an execution", args)? {
        return Ok(Claim::Refused(found));
    }
    Ok(Claim::Won(found))
}

/// Runs a claim or hold statement (`sql`: the lease taken on the execution in `from`);
/// whether it took the lease.
fn take_lease(
    conn: &Connection,
    loc: &str,
    sql: &str,
    doing: &str,
    (runtime, id, from, lease, now_ms): (&str, &str, ExecutionStatus, &Lease, i64),
) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(sql)
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
        .ctx(loc, doing)?;
    Ok(changed == 1)
}

/// Drops the lease `owner` holds on an execution that is not running.
pub(crate) fn release(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    id: &str,
    owner: &str,
) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(RELEASE)
        .and_then(|mut s| s.execute(params![runtime, id, owner]))
        .ctx(loc, "releasing an execution")?;
    Ok(changed == 1)
}
