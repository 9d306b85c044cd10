//! The hot path: [`commit`] (entries plus a status change, as one CAS) and [`claim`].
//!
//! Each is one SQL statement, hence one round trip and one implicit transaction: the CAS
//! runs in a data-modifying CTE and the entry upsert reads its output, so entries are
//! written only when the CAS held. Under READ COMMITTED a concurrent writer of the same row
//! waits for the row lock and then re-checks the `WHERE` against the committed row, so of
//! two racing status changes exactly one matches.

use crate::codec::{json, json_decision};
use crate::entries::{upsert_entries, EntryArrays};
use crate::error::Ctx;
use codemode::{check_transition, Claim, Commit, ExecutionStatus, Lease, StoreError};
use deadpool_postgres::Client;
use std::sync::LazyLock;
use tokio_postgres::types::ToSql;

/// The status CAS (`$3` expected, `$9` the lease owner that must still hold, or NULL and
/// then no lease may be live at `$8`, unless the change is a cancel, which takes the run
/// from its pass) and the entries, in one statement. `$10` drops the lease (any status but
/// `running`); `$11` is a decision to append to the execution's (as text: `jsonb` cannot hold
/// the `\u0000` a decision's text may carry).
/// `result`, `error` and `logs` left NULL keep their recorded values.
fn transition_sql() -> String {
    format!(
        "WITH cas AS (
    UPDATE codemode_executions SET
        status = $4,
        result = COALESCE($5::text, result),
        error = COALESCE($6::text, error),
        logs = COALESCE($7::text, logs),
        updated_at = $8,
        lease_owner = CASE WHEN $10::boolean THEN NULL ELSE lease_owner END,
        lease_until_ms = CASE WHEN $10::boolean THEN NULL ELSE lease_until_ms END,
        decisions = CASE WHEN $11::text IS NULL THEN decisions
                         WHEN decisions IS NULL OR decisions = '[]' THEN '[' || $11::text || ']'
                         ELSE left(decisions, -1) || ',' || $11::text || ']' END,
        clock = CASE WHEN $12::boolean THEN $13::text ELSE clock END
    WHERE runtime = $1 AND id = $2 AND status = $3
      AND (CASE WHEN $9::text IS NULL THEN lease_until_ms IS NULL OR lease_until_ms < $8
                                       OR ($3 = 'running' AND $4 = 'cancelled')
                ELSE lease_owner = $9::text END)
    RETURNING 1
), entries AS (
    {}
)
SELECT count(*) FROM cas",
        upsert_entries(14)
    )
}

/// Entries only: the row is locked (`FOR SHARE`) so no claim can take it mid-write; `$3` is
/// the lease owner that must hold, or NULL for none.
fn entries_sql() -> String {
    format!(
        "WITH cas AS (
    SELECT 1 FROM codemode_executions
    WHERE runtime = $1 AND id = $2
      AND ($3::text IS NULL OR lease_owner = $3::text)
    FOR SHARE
), entries AS (
    {}
)
SELECT count(*) FROM cas",
        upsert_entries(4)
    )
}

/// Entries and the clock tape (`$4`): the row is updated, which locks it as `FOR SHARE` does.
fn entries_clock_sql() -> String {
    format!(
        "WITH cas AS (
    UPDATE codemode_executions SET clock = $4::text
    WHERE runtime = $1 AND id = $2
      AND ($3::text IS NULL OR lease_owner = $3::text)
    RETURNING 1
), entries AS (
    {}
)
SELECT count(*) FROM cas",
        upsert_entries(5)
    )
}

static TRANSITION: LazyLock<String> = LazyLock::new(transition_sql);
static ENTRIES: LazyLock<String> = LazyLock::new(entries_sql);
static ENTRIES_CLOCK: LazyLock<String> = LazyLock::new(entries_clock_sql);

/// The claim's CAS, then the claimed execution with its log. `$7` is the connectors
/// available: one the execution recorded and that is missing from it refuses the claim.
static CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH claimed AS (
    UPDATE codemode_executions
    SET status = 'running', lease_owner = $4, lease_until_ms = $5, updated_at = $6
    WHERE runtime = $1 AND id = $2 AND status = $3
      AND (lease_until_ms IS NULL OR lease_until_ms < $6)
      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(connectors::jsonb) AS c(name)
                      WHERE c.name <> ALL($7::text[]))
    RETURNING *
)
{}",
        crate::codec::executions_with_log("claimed")
    )
});

/// A decision's lease on an execution that is not running (its status stays), then the
/// execution with its log as held.
static HOLD: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH claimed AS (
    UPDATE codemode_executions SET lease_owner = $4, lease_until_ms = $5
    WHERE runtime = $1 AND id = $2 AND status = $3 AND status <> 'running'
      AND (lease_until_ms IS NULL OR lease_until_ms < $6)
    RETURNING *
)
{}",
        crate::codec::executions_with_log("claimed")
    )
});

/// Applies `commit` as one statement; false (nothing written) when the CAS did not hold.
pub(crate) async fn commit(
    client: &Client,
    loc: &str,
    runtime: &str,
    commit: &Commit,
) -> Result<bool, StoreError> {
    let id = commit.execution_id.as_str();
    let owner = commit.owner.as_deref();
    let entries = EntryArrays::new(&commit.entries)?;
    let sets_clock = commit.clock.is_some();
    let clock = commit.clock.as_ref().and_then(codemode::ClockTape::to_json);
    let matched: i64 = match &commit.transition {
        Some(t) => {
            check_transition(t.from, t.to)?;
            let result = t.result.as_ref().map(json).transpose()?;
            let logs = t
                .logs
                .as_deref()
                .map(crate::codec::json_strings)
                .transpose()?;
            let drops_lease = t.to != ExecutionStatus::Running;
            let (from, to) = (t.from.as_str(), t.to.as_str());
            let decision = t.decision.as_ref().map(json_decision).transpose()?;
            let error = crate::codec::opt_text_in(t.error.as_deref());
            let head: [&(dyn ToSql + Sync); 13] = [
                &runtime,
                &id,
                &from,
                &to,
                &result,
                &error,
                &logs,
                &t.at_ms,
                &owner,
                &drops_lease,
                &decision,
                &sets_clock,
                &clock,
            ];
            run_commit(client, loc, &TRANSITION, &head, &entries).await?
        }
        None if sets_clock => {
            let head: [&(dyn ToSql + Sync); 4] = [&runtime, &id, &owner, &clock];
            run_commit(client, loc, &ENTRIES_CLOCK, &head, &entries).await?
        }
        None => {
            let head: [&(dyn ToSql + Sync); 3] = [&runtime, &id, &owner];
            run_commit(client, loc, &ENTRIES, &head, &entries).await?
        }
    };
    Ok(matched == 1)
}

/// Runs one commit statement `sql` with `head`'s parameters followed by the entries' arrays;
/// the count of rows the CAS matched.
async fn run_commit(
    client: &Client,
    loc: &str,
    sql: &str,
    head: &[&(dyn ToSql + Sync)],
    entries: &EntryArrays<'_>,
) -> Result<i64, StoreError> {
    let params: Vec<&(dyn ToSql + Sync)> = head.iter().copied().chain(entries.params()).collect();
    let stmt = client
        .prepare_cached(sql)
        .await
        .ctx(loc, "preparing a commit")?;
    Ok(client
        .query_one(&stmt, &params)
        .await
        .ctx(loc, "committing")?
        .get(0))
}

/// Moves `from` to `running` under `lease` and returns it as claimed, in one statement;
/// from `running` only once the old lease expired, and only when every connector it
/// recorded is `available`. A refused claim reads the execution as it is.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    lease: &Lease,
    now_ms: i64,
    available: &[String],
) -> Result<Claim, StoreError> {
    check_transition(from, ExecutionStatus::Running)?;
    let params: [&(dyn ToSql + Sync); 7] = [
        &runtime,
        &id,
        &from.as_str(),
        &lease.owner,
        &lease.until_ms,
        &now_ms,
        &available,
    ];
    take_lease(
        client,
        loc,
        &CLAIM,
        "claiming an execution",
        &params,
        runtime,
        id,
    )
    .await
}

/// Takes a decision's `lease` on an execution in `from` (not running) in one statement;
/// refused while another lease is live. A refused hold reads the execution as it is.
pub(crate) async fn hold(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: &str,
    from: ExecutionStatus,
    lease: &Lease,
    now_ms: i64,
) -> Result<Claim, StoreError> {
    let params: [&(dyn ToSql + Sync); 6] = [
        &runtime,
        &id,
        &from.as_str(),
        &lease.owner,
        &lease.until_ms,
        &now_ms,
    ];
    take_lease(
        client,
        loc,
        &HOLD,
        "holding an execution",
        &params,
        runtime,
        id,
    )
    .await
}

/// Runs a claim or hold statement (`sql`, which returns the execution when it took the
/// lease): `Won` with that execution, else the execution as it is (`Refused`) or `Unknown`.
async fn take_lease(
    client: &Client,
    loc: &str,
    sql: &str,
    doing: &str,
    params: &[&(dyn ToSql + Sync)],
    runtime: &str,
    id: &str,
) -> Result<Claim, StoreError> {
    let stmt = client
        .prepare_cached(sql)
        .await
        .ctx(loc, "preparing a claim or hold")?;
    let taken = client.query_opt(&stmt, params).await.ctx(loc, doing)?;
    if let Some(row) = taken {
        return crate::codec::execution(&row).map(Claim::Won);
    }
    Ok(
        match crate::executions::get_one(client, loc, runtime, id).await? {
            Some(found) => Claim::Refused(found),
            None => Claim::Unknown,
        },
    )
}

/// Drops the lease `owner` holds on an execution that is not running.
pub(crate) async fn release(
    client: &Client,
    loc: &str,
    runtime: &str,
    id: &str,
    owner: &str,
) -> Result<bool, StoreError> {
    let stmt = client
        .prepare_cached(
            "UPDATE codemode_executions SET lease_owner = NULL, lease_until_ms = NULL
             WHERE runtime = $1 AND id = $2 AND lease_owner = $3 AND status <> 'running'",
        )
        .await
        .ctx(loc, "preparing a release")?;
    let changed = client
        .execute(&stmt, &[&runtime, &id, &owner])
        .await
        .ctx(loc, "releasing an execution")?;
    Ok(changed == 1)
}
