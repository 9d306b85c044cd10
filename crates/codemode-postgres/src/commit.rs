//! The hot path: [`commit`] (entries plus a status change, as one CAS) and [`claim`].
//!
//! Each is one SQL statement, hence one round trip and one implicit transaction: the CAS
//! runs in a data-modifying CTE and the entry upsert reads its output, so entries are
//! written only when the CAS held. Under READ COMMITTED a concurrent writer of the same row
//! waits for the row lock and then re-checks the `WHERE` against the committed row, so of
//! two racing status changes exactly one matches.

use crate::codec::{json, seq_to_sql};
use crate::error::Ctx;
use codemode::{check_transition, Claim, Commit, ExecutionStatus, Lease, LogEntry, StoreError};
use deadpool_postgres::Client;
use std::collections::BTreeMap;
use std::sync::LazyLock;
use tokio_postgres::types::ToSql;

/// Upserts the entries given as arrays from `$first` on, if the CTE `cas` returned a row.
pub(crate) fn upsert_entries(first: usize) -> String {
    let p = |i: usize| format!("${}", first + i);
    format!(
        "INSERT INTO codemode_log_entries (runtime, execution_id, seq, connector, method, args,
                                  result, error, requires_approval, ephemeral, state)
    SELECT $1, $2, e.* FROM unnest({}::bigint[], {}::text[], {}::text[], {}::text[],
                                  {}::text[], {}::text[], {}::boolean[], {}::boolean[],
                                  {}::text[]) AS e
    WHERE EXISTS (SELECT 1 FROM cas)
    ON CONFLICT (runtime, execution_id, seq) DO UPDATE SET
        connector = excluded.connector, method = excluded.method, args = excluded.args,
        result = excluded.result, error = excluded.error,
        requires_approval = excluded.requires_approval, ephemeral = excluded.ephemeral,
        state = excluded.state",
        p(0),
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6),
        p(7),
        p(8)
    )
}

/// The status CAS (`$3` expected, `$9` the lease owner that must still hold, or NULL) and
/// the entries, in one statement. `$10` clears the lease when leaving `running`.
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
        lease_until_ms = CASE WHEN $10::boolean THEN NULL ELSE lease_until_ms END
    WHERE runtime = $1 AND id = $2 AND status = $3
      AND ($9::text IS NULL OR (status = 'running' AND lease_owner = $9::text))
    RETURNING 1
), entries AS (
    {}
)
SELECT count(*) FROM cas",
        upsert_entries(11)
    )
}

/// Entries only: the row is locked (`FOR SHARE`) so no claim can take it mid-write; `$3` is
/// the lease owner that must hold, or NULL for none.
fn entries_sql() -> String {
    format!(
        "WITH cas AS (
    SELECT 1 FROM codemode_executions
    WHERE runtime = $1 AND id = $2
      AND ($3::text IS NULL OR (status = 'running' AND lease_owner = $3::text))
    FOR SHARE
), entries AS (
    {}
)
SELECT count(*) FROM cas",
        upsert_entries(4)
    )
}

static TRANSITION: LazyLock<String> = LazyLock::new(transition_sql);
static ENTRIES: LazyLock<String> = LazyLock::new(entries_sql);

/// The claim's CAS, then the claimed execution with its log. `$7` is the connectors
/// available: one the execution recorded and that is missing from it refuses the claim.
static CLAIM: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH claimed AS (
    UPDATE codemode_executions
    SET status = 'running', lease_owner = $4, lease_until_ms = $5, updated_at = $6
    WHERE runtime = $1 AND id = $2 AND status = $3
      AND (status <> 'running' OR lease_until_ms IS NULL OR lease_until_ms < $6)
      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(connectors::jsonb) AS c(name)
                      WHERE c.name <> ALL($7::text[]))
    RETURNING *
)
{}",
        crate::codec::executions_with_log("claimed")
    )
});

/// Log entries as column arrays, one element per entry (the last of a repeated seq wins).
pub(crate) struct EntryArrays<'a> {
    seqs: Vec<i64>,
    connectors: Vec<&'a str>,
    methods: Vec<&'a str>,
    args: Vec<String>,
    results: Vec<Option<String>>,
    errors: Vec<Option<&'a str>>,
    approvals: Vec<bool>,
    ephemerals: Vec<bool>,
    states: Vec<&'a str>,
}

impl<'a> EntryArrays<'a> {
    /// Encodes `entries`.
    pub fn new(entries: &'a [LogEntry]) -> Result<Self, StoreError> {
        let mut by_seq: BTreeMap<u64, &LogEntry> = BTreeMap::new();
        for e in entries {
            by_seq.insert(e.seq, e);
        }
        let n = by_seq.len();
        let mut a = EntryArrays {
            seqs: Vec::with_capacity(n),
            connectors: Vec::with_capacity(n),
            methods: Vec::with_capacity(n),
            args: Vec::with_capacity(n),
            results: Vec::with_capacity(n),
            errors: Vec::with_capacity(n),
            approvals: Vec::with_capacity(n),
            ephemerals: Vec::with_capacity(n),
            states: Vec::with_capacity(n),
        };
        for e in by_seq.into_values() {
            a.seqs.push(seq_to_sql(e.seq)?);
            a.connectors.push(&e.connector);
            a.methods.push(&e.method);
            a.args.push(json(&e.args)?);
            a.results.push(e.result.as_ref().map(json).transpose()?);
            a.errors.push(e.error.as_deref());
            a.approvals.push(e.requires_approval);
            a.ephemerals.push(e.ephemeral);
            a.states.push(e.state.as_str());
        }
        Ok(a)
    }

    /// The nine array parameters, in the order [`upsert_entries`] expects.
    pub fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.seqs,
            &self.connectors,
            &self.methods,
            &self.args,
            &self.results,
            &self.errors,
            &self.approvals,
            &self.ephemerals,
            &self.states,
        ]
    }
}

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
    let matched: i64 = match &commit.transition {
        Some(t) => {
            check_transition(t.from, t.to)?;
            let result = t.result.as_ref().map(json).transpose()?;
            let logs = t
                .logs
                .as_deref()
                .map(crate::codec::json_strings)
                .transpose()?;
            let leaves_running =
                t.from == ExecutionStatus::Running && t.to != ExecutionStatus::Running;
            let (from, to) = (t.from.as_str(), t.to.as_str());
            let head: [&(dyn ToSql + Sync); 10] = [
                &runtime,
                &id,
                &from,
                &to,
                &result,
                &t.error,
                &logs,
                &t.at_ms,
                &owner,
                &leaves_running,
            ];
            let params: Vec<&(dyn ToSql + Sync)> =
                head.into_iter().chain(entries.params()).collect();
            let stmt = client
                .prepare_cached(&TRANSITION)
                .await
                .ctx(loc, "preparing a commit")?;
            client
                .query_one(&stmt, &params)
                .await
                .ctx(loc, "committing")?
                .get(0)
        }
        None => {
            let head: [&(dyn ToSql + Sync); 3] = [&runtime, &id, &owner];
            let params: Vec<&(dyn ToSql + Sync)> =
                head.into_iter().chain(entries.params()).collect();
            let stmt = client
                .prepare_cached(&ENTRIES)
                .await
                .ctx(loc, "preparing a commit")?;
            client
                .query_one(&stmt, &params)
                .await
                .ctx(loc, "committing")?
                .get(0)
        }
    };
    Ok(matched == 1)
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
    let stmt = client
        .prepare_cached(&CLAIM)
        .await
        .ctx(loc, "preparing a claim")?;
    let claimed = client
        .query_opt(
            &stmt,
            &[
                &runtime,
                &id,
                &from.as_str(),
                &lease.owner,
                &lease.until_ms,
                &now_ms,
                &available,
            ],
        )
        .await
        .ctx(loc, "claiming an execution")?;
    if let Some(row) = claimed {
        return crate::codec::execution(&row).map(Claim::Won);
    }
    Ok(
        match crate::executions::get_one(client, loc, runtime, id).await? {
            Some(found) => Claim::Refused(found),
            None => Claim::Unknown,
        },
    )
}
