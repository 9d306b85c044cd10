//! Reads that answer a listing or an audit export: only the columns they report, so that an
//! execution's log, result and console output never leave the database for them.

use crate::codec::{self, get, status};
use crate::error::Ctx;
use codemode::{Execution, ExecutionStatus, ExecutionSummary, StoreError, CODE_PREVIEW_CHARS};
use deadpool_postgres::Client;
use std::sync::LazyLock;

/// A page of summaries newest first, before the place `($3, $4)`. Entries are counted in the
/// database; pending ones only of paused executions (no other status has any).
const SUMMARIES: &str = "
SELECT e.id, substr(e.code, 1, $6::int), length(substr(e.code, 1, $6::int + 1)) > $6::int,
       e.status, e.connectors, e.created_at, e.updated_at,
       (SELECT count(*) FROM codemode_log_entries l
          WHERE l.runtime = e.runtime AND l.execution_id = e.id),
       (SELECT count(*) FROM codemode_log_entries l
          WHERE l.runtime = e.runtime AND l.execution_id = e.id AND l.connector <> 'codemode'),
       CASE WHEN e.status = 'paused' THEN
         (SELECT count(*) FROM codemode_log_entries l
            WHERE l.runtime = e.runtime AND l.execution_id = e.id AND l.state = 'pending')
       ELSE 0 END
FROM codemode_executions e
WHERE e.runtime = $1 AND ($2::text IS NULL OR e.status = $2::text)
  AND (e.created_at, e.pk) < ($3, $4)
ORDER BY e.created_at DESC, e.pk DESC
LIMIT $5";

/// At most `limit` summaries newest first, optionally of one status, after the execution
/// `before` (none when it is unknown).
pub(crate) async fn summaries(
    client: &Client,
    loc: &str,
    runtime: &str,
    only: Option<ExecutionStatus>,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<ExecutionSummary>, StoreError> {
    let (created_at, pk): (i64, i64) = match before {
        None => (i64::MAX, i64::MAX),
        Some(id) => {
            let Some(place) = crate::executions::place(client, loc, runtime, id).await? else {
                return Ok(Vec::new());
            };
            place
        }
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let preview = i32::try_from(CODE_PREVIEW_CHARS).unwrap_or(i32::MAX - 1);
    let only = only.map(|s| s.as_str());
    let stmt = client
        .prepare_cached(SUMMARIES)
        .await
        .ctx(loc, "preparing a listing")?;
    let rows = client
        .query(
            &stmt,
            &[&runtime, &only, &created_at, &pk, &limit, &preview],
        )
        .await
        .ctx(loc, "listing executions")?;
    rows.iter()
        .map(|r| {
            let id: String = get(r, 0)?;
            let connectors: String = get(r, 4)?;
            let count = |i: usize| get::<i64>(r, i).map(|n| u64::try_from(n).unwrap_or(0));
            Ok(ExecutionSummary {
                code: get(r, 1)?,
                code_cut: get(r, 2)?,
                status: status(&get::<String>(r, 3)?)?,
                connectors: serde_json::from_str(&connectors)
                    .map_err(|e| StoreError::Decode(format!("execution {id} connectors: {e}")))?,
                created_at: get(r, 5)?,
                updated_at: get(r, 6)?,
                entries: count(7)?,
                calls: count(8)?,
                pending: count(9)?,
                id,
            })
        })
        .collect()
}

static AUDIT: LazyLock<String> = LazyLock::new(|| {
    codec::audit_executions(
        "(SELECT runtime, id, status, connectors, created_at, updated_at, decisions,
                 traceparent, pk
          FROM codemode_executions
          WHERE runtime = $1 AND created_at < $3 AND updated_at >= $2
          ORDER BY created_at, pk LIMIT $4)",
    ) + " ORDER BY e.created_at, e.pk"
});

/// What an audit export of `[since_ms, until_ms)` reads, live executions and archived
/// records merged: see `Store::audit_executions`.
pub(crate) async fn audit(
    client: &Client,
    loc: &str,
    runtime: &str,
    since_ms: i64,
    until_ms: i64,
    limit: usize,
) -> Result<Vec<Execution>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let stmt = client
        .prepare_cached(&AUDIT)
        .await
        .ctx(loc, "preparing an audit read")?;
    let rows = client
        .query(&stmt, &[&runtime, &since_ms, &until_ms, &limit])
        .await
        .ctx(loc, "reading executions for an audit export")?;
    let live = rows
        .iter()
        .map(codec::execution)
        .collect::<Result<Vec<_>, _>>()?;
    // Read after the live ones: an execution removed in between is then in the archive.
    let archived = crate::archive::window(client, loc, runtime, since_ms, until_ms, limit).await?;
    Ok(codemode::store::merge_audit_records(
        live,
        archived,
        usize::try_from(limit).unwrap_or(usize::MAX),
    ))
}
