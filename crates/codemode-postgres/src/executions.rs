//! Executions: insert with retention, reads with their logs, delete, prune, stale, pending.

use crate::archive;
use crate::codec::{self, get, json, json_strings, seq_from_sql, status, value};
use crate::entries::{upsert_entries, EntryArrays};
use crate::error::{map_error, Ctx};
use codemode::{Deletion, Execution, ExecutionStatus, Lease, PendingAction, StoreError};
use deadpool_postgres::Client;
use std::sync::LazyLock;
use tokio_postgres::types::ToSql;

/// Deletes the undo records of the workspace changes made by the executions `deleted` (a
/// CTE returning `id`) names; execution ids are UUIDs, unique across runtimes, and
/// workspaces belong to no runtime.
fn undo_sql(deleted: &str) -> String {
    format!(
        "DELETE FROM codemode_workspace_changes
    WHERE execution_id IN (SELECT id FROM {deleted})"
    )
}

/// The first key of the advisory lock that prunes of one runtime take (the second is the
/// runtime name's hash): "cmpr".
const PRUNE_LOCK: i32 = 0x636d_7072;

/// How a prune waits for another prune of the same runtime.
#[derive(Clone, Copy)]
enum PruneTurn {
    /// Skips the prune while another runs (an insert's: that one prunes what this would).
    SkipIfBusy,
    /// Waits for it (an explicit prune, whose count the caller reads).
    Wait,
}

/// Terminal executions of `$1` past the newest `$K`, deleted (their logs by cascade),
/// except those holding a write still applied that were updated at or after
/// `since` (epoch ms): they stay for their audit and their rollback until older.
/// Prunes of one runtime take turns under a transaction's advisory lock, taken before any
/// row is touched: two of them deleting the same old rows in different orders deadlocked.
fn prune_sql(keep: &str, since: &str, turn: PruneTurn) -> String {
    let taken = taken_sql(turn);
    format!(
        "DELETE FROM codemode_executions
    WHERE {taken}
      AND status IN ('completed', 'error', 'rejected', 'rolled_back', 'cancelled')
      AND pk IN (SELECT pk FROM codemode_executions
                 WHERE runtime = $1
                   AND status IN ('completed', 'error', 'rejected', 'rolled_back', 'cancelled')
                 ORDER BY created_at DESC, pk DESC OFFSET {keep})
      AND NOT (updated_at >= {since}::bigint AND status <> 'rolled_back'
               AND EXISTS (SELECT 1 FROM codemode_log_entries l
                           WHERE l.runtime = codemode_executions.runtime
                             AND l.execution_id = codemode_executions.id
                             AND l.state = 'applied'
                             AND (l.requires_approval OR NOT l.read_only)))
    RETURNING id"
    )
}

/// Whether the prune's advisory lock is taken (a prune takes it again in its transaction).
fn taken_sql(turn: PruneTurn) -> String {
    match turn {
        PruneTurn::SkipIfBusy => {
            format!("(SELECT pg_try_advisory_xact_lock({PRUNE_LOCK}, hashtext($1)))")
        }
        PruneTurn::Wait => {
            format!("(SELECT true FROM pg_advisory_xact_lock({PRUNE_LOCK}, hashtext($1)) AS taken)")
        }
    }
}

/// The common table expressions that follow a prune's `pruned`: the undo records of the
/// pruned executions deleted, their audit records archived, and archived records last
/// updated before `audit_since` (a parameter) deleted.
fn after_prune_sql(audit_since: &str, turn: PruneTurn) -> String {
    format!(
        "undo AS (
    {}
), archived AS (
    {}
), expired AS (
    {}
)",
        undo_sql("pruned"),
        archive::archive_sql("pruned"),
        archive::expire_sql(audit_since, &taken_sql(turn))
    )
}

/// Insert, its entries and the prune as one statement: one round trip, one transaction.
/// The prune does not see the new row, which is not terminal anyway.
static INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{}, pruned AS (
    {}
), {}
SELECT count(*) FROM pruned",
        insert_ctes(),
        prune_sql("$13", "$16", PruneTurn::SkipIfBusy),
        after_prune_sql("$17", PruneTurn::SkipIfBusy)
    )
});

/// [`INSERT`] for a runtime that keeps every execution: no prune, which would walk every
/// terminal execution to find none past `$13` (the maximum; `$16` goes unused too). Archived
/// audit records last updated before `$17` still expire.
static INSERT_KEEPING_ALL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{}, expired AS (
    {}
)
SELECT $13::bigint * 0 + $16::bigint * 0",
        insert_ctes(),
        archive::expire_sql("$17", &taken_sql(PruneTurn::SkipIfBusy))
    )
});

/// The insert and its entries, as the first common table expressions of a statement.
fn insert_ctes() -> String {
    format!(
        "WITH cas AS (
    INSERT INTO codemode_executions (runtime, id, code, status, result, error, logs,
                                     connectors, created_at, updated_at, lease_owner,
                                     lease_until_ms, decisions, traceparent)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15)
    RETURNING 1
), entries AS (
    {}
)",
        upsert_entries(18)
    )
}

static PRUNE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH pruned AS ({}), {} SELECT count(*) FROM pruned",
        prune_sql("$2", "$3", PruneTurn::Wait),
        after_prune_sql("$4", PruneTurn::Wait)
    )
});

/// Inserts a running execution (and any entries it carries), then prunes beyond `keep`.
pub(crate) async fn insert(
    client: &Client,
    loc: &str,
    runtime: &str,
    execution: &Execution,
    lease: &Lease,
    (keep, protect_since_ms, audit_since_ms): (usize, i64, i64),
) -> Result<usize, StoreError> {
    let result = execution.result.as_ref().map(json).transpose()?;
    let logs = json_strings(&execution.logs)?;
    let connectors = json_strings(&execution.connectors)?;
    let running = execution.status == ExecutionStatus::Running;
    let owner = running.then_some(lease.owner.as_str());
    let until = running.then_some(lease.until_ms);
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let entries = EntryArrays::new(&execution.log)?;
    let status = execution.status.as_str();
    let decisions = codec::json_decisions(&execution.decisions)?;
    let code = codec::text_in(&execution.code);
    let error = codec::opt_text_in(execution.error.as_deref());
    let head: [&(dyn ToSql + Sync); 17] = [
        &runtime,
        &execution.id,
        &code,
        &status,
        &result,
        &error,
        &logs,
        &connectors,
        &execution.created_at,
        &execution.updated_at,
        &owner,
        &until,
        &keep,
        &decisions,
        &execution.traceparent,
        &protect_since_ms,
        &audit_since_ms,
    ];
    let params: Vec<&(dyn ToSql + Sync)> = head.into_iter().chain(entries.params()).collect();
    let sql = if keep == i64::MAX {
        &INSERT_KEEPING_ALL
    } else {
        &INSERT
    };
    let stmt = client
        .prepare_cached(sql)
        .await
        .ctx(loc, "preparing an insert")?;
    let pruned: i64 = match client.query_one(&stmt, &params).await {
        Ok(row) => get(&row, 0)?,
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
            return Err(StoreError::Backend(format!(
                "execution {} already exists in runtime {runtime:?} ({loc})",
                execution.id
            )))
        }
        Err(e) => return Err(map_error(loc, "inserting an execution", e)),
    };
    Ok(usize::try_from(pruned).unwrap_or(0))
}

/// Deletes terminal executions beyond the newest `keep`, except those holding an approved
/// write still applied that were updated at or after `protect_since_ms`, archiving their
/// audit records; deletes archived records last updated before `audit_since_ms`.
pub(crate) async fn prune(
    client: &Client,
    loc: &str,
    runtime: &str,
    keep: usize,
    protect_since_ms: i64,
    audit_since_ms: i64,
) -> Result<usize, StoreError> {
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let stmt = client
        .prepare_cached(&PRUNE)
        .await
        .ctx(loc, "preparing a prune")?;
    let row = client
        .query_one(
            &stmt,
            &[&runtime, &keep, &protect_since_ms, &audit_since_ms],
        )
        .await
        .ctx(loc, "pruning executions")?;
    Ok(usize::try_from(get::<i64>(&row, 0)?).unwrap_or(0))
}

static DELETE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH gone AS (
    DELETE FROM codemode_executions
    WHERE runtime = $1 AND id = $2
      AND status IN ('completed', 'error', 'rejected', 'rolled_back', 'cancelled')
      AND (lease_until_ms IS NULL OR lease_until_ms < $3)
    RETURNING status, id
), undo AS (
    {}
), archived AS (
    {}
)
SELECT status, true FROM gone
UNION ALL
SELECT status, false FROM codemode_executions
WHERE runtime = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM gone)",
        undo_sql("gone"),
        archive::archive_sql("gone")
    )
});

/// Deletes one terminal execution (its log by cascade, its workspace undo records too, its
/// audit record archived) unless a lease live at `now_ms` holds it; a refused delete reads
/// the status it found.
pub(crate) async fn delete(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: &str,
    now_ms: i64,
) -> Result<Deletion, StoreError> {
    let stmt = client
        .prepare_cached(&DELETE)
        .await
        .ctx(loc, "preparing a delete")?;
    let row = client
        .query_opt(&stmt, &[&runtime, &id, &now_ms])
        .await
        .ctx(loc, "deleting an execution")?;
    let Some(row) = row else {
        return Ok(Deletion::Unknown);
    };
    let found = status(&get::<String>(&row, 0)?)?;
    Ok(if get::<bool>(&row, 1)? {
        Deletion::Deleted(found)
    } else {
        Deletion::Refused(found)
    })
}

static GET: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} WHERE e.runtime = $1 AND e.id = $2",
        codec::executions_with_log("codemode_executions")
    )
});

static LIST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} WHERE e.runtime = $1 AND ($2::text IS NULL OR e.status = $2::text)
         ORDER BY e.created_at DESC, e.pk DESC LIMIT $3::bigint",
        codec::executions_with_log("codemode_executions")
    )
});

/// One execution with its log, read in one statement (one snapshot).
pub(crate) async fn get_one(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: &str,
) -> Result<Option<Execution>, StoreError> {
    let stmt = client
        .prepare_cached(&GET)
        .await
        .ctx(loc, "preparing a read")?;
    let row = client
        .query_opt(&stmt, &[&runtime, &id])
        .await
        .ctx(loc, "reading an execution")?;
    row.as_ref().map(codec::execution).transpose()
}

/// Executions newest first with their logs, in one statement.
pub(crate) async fn list(
    client: &Client,
    loc: &str,
    runtime: &str,
    limit: Option<usize>,
    only: Option<ExecutionStatus>,
) -> Result<Vec<Execution>, StoreError> {
    let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let only = only.map(|s| s.as_str());
    let stmt = client
        .prepare_cached(&LIST)
        .await
        .ctx(loc, "preparing a list")?;
    let rows = client
        .query(&stmt, &[&runtime, &only, &limit])
        .await
        .ctx(loc, "listing executions")?;
    rows.iter().map(codec::execution).collect()
}

/// Paused ones last updated before `before_ms`; running ones too once their lease expired.
pub(crate) async fn stale(
    client: &Client,
    loc: &str,
    runtime: &str,
    before_ms: i64,
    now_ms: i64,
) -> Result<Vec<(String, ExecutionStatus)>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT id, status FROM codemode_executions
             WHERE runtime = $1 AND updated_at < $2
               AND (status = 'paused' OR (status = 'running'
                    AND (lease_until_ms IS NULL OR lease_until_ms < $3)))
             ORDER BY created_at, pk",
        )
        .await
        .ctx(loc, "preparing a stale query")?;
    let rows = client
        .query(&stmt, &[&runtime, &before_ms, &now_ms])
        .await
        .ctx(loc, "finding stale executions")?;
    rows.iter()
        .map(|r| Ok((get(r, 0)?, status(&get::<String>(r, 1)?)?)))
        .collect()
}

/// Where execution `id` stands in the listing order (`created_at`, `pk`): a page's cursor;
/// `None` when no such execution is stored.
pub(crate) async fn place(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: &str,
) -> Result<Option<(i64, i64)>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT created_at, pk FROM codemode_executions WHERE runtime = $1 AND id = $2",
        )
        .await
        .ctx(loc, "preparing a cursor query")?;
    let row = client
        .query_opt(&stmt, &[&runtime, &id])
        .await
        .ctx(loc, "finding a page's cursor")?;
    row.map(|r| Ok((get(&r, 0)?, get(&r, 1)?))).transpose()
}

/// One page of pending actions in the order of [`pending`], from just after the action `after`
/// (found by its execution's place, whatever that execution's status now), in one statement.
pub(crate) async fn pending_page(
    client: &Client,
    loc: &str,
    runtime: &str,
    after: Option<(&str, u64)>,
    limit: usize,
) -> Result<Vec<PendingAction>, StoreError> {
    let (created_at, pk, seq) = match after {
        None => (i64::MAX, i64::MAX, -1),
        Some((id, seq)) => {
            let Some((created_at, pk)) = place(client, loc, runtime, id).await? else {
                return Ok(Vec::new());
            };
            (created_at, pk, codec::seq_to_sql(seq)?)
        }
    };
    let stmt = client
        .prepare_cached(
            "SELECT l.execution_id, l.seq, l.connector, l.method, l.args
             FROM codemode_executions e JOIN codemode_log_entries l
               ON l.runtime = e.runtime AND l.execution_id = e.id
             WHERE e.runtime = $1 AND e.status = 'paused' AND l.state = 'pending'
               AND (e.created_at, e.pk) <= ($2, $3) AND (e.pk <> $3 OR l.seq > $4)
             ORDER BY e.created_at DESC, e.pk DESC, l.seq
             LIMIT $5",
        )
        .await
        .ctx(loc, "preparing a pending page query")?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client
        .query(&stmt, &[&runtime, &created_at, &pk, &seq, &limit])
        .await
        .ctx(loc, "listing pending actions")?;
    decode_pending(&rows)
}

/// Pending entries of paused executions, newest execution first, each in seq order.
pub(crate) async fn pending(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: Option<&str>,
) -> Result<Vec<PendingAction>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT l.execution_id, l.seq, l.connector, l.method, l.args
             FROM codemode_executions e JOIN codemode_log_entries l
               ON l.runtime = e.runtime AND l.execution_id = e.id
             WHERE e.runtime = $1 AND e.status = 'paused' AND l.state = 'pending'
               AND ($2::text IS NULL OR e.id = $2::text)
             ORDER BY e.created_at DESC, e.pk DESC, l.seq",
        )
        .await
        .ctx(loc, "preparing a pending query")?;
    let rows = client
        .query(&stmt, &[&runtime, &id])
        .await
        .ctx(loc, "listing pending actions")?;
    decode_pending(&rows)
}

fn decode_pending(rows: &[tokio_postgres::Row]) -> Result<Vec<PendingAction>, StoreError> {
    rows.iter()
        .map(|r| {
            let execution_id: String = get(r, 0)?;
            let seq = seq_from_sql(get(r, 1)?)?;
            let args: String = get(r, 4)?;
            Ok(PendingAction {
                args: value(&args, &format!("execution {execution_id} seq {seq} args"))?,
                seq,
                connector: get(r, 2)?,
                method: get(r, 3)?,
                execution_id,
            })
        })
        .collect()
}
