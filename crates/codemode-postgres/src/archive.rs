//! The audit archive: the audit record of each pruned or deleted execution (what an audit
//! export reads of it: its row without code, result or console output, and the arrays of
//! its applied, reverted and decided entries without results or errors), written by the
//! statement that removes the execution and kept until it is older than the audit retention.

use crate::codec;
use crate::error::Ctx;
use codemode::{Execution, StoreError};
use deadpool_postgres::Client;

/// A statement (for a common table expression) copying into the archive the audit records
/// of the executions of `$1` that `removed` (a CTE returning `id`) names. It reads them in
/// the statement's snapshot, where the rows being deleted beside it are still there.
pub(crate) fn archive_sql(removed: &str) -> String {
    format!(
        "INSERT INTO codemode_audit_archive (runtime, id, status, connectors, created_at,
        updated_at, decisions, traceparent, entry_seqs, entry_connectors, entry_methods,
        entry_args, entry_approvals, entry_ephemerals, entry_states, entry_approved_args,
        entry_decisions, entry_delivered, entry_read_onlys)
    SELECT e.runtime, e.id, e.status, e.connectors, e.created_at, e.updated_at, e.decisions,
           e.traceparent, l.seqs, l.connectors, l.methods, l.args, l.approvals, l.ephemerals,
           l.states, l.approved_args, l.decisions, l.delivered, l.read_onlys
    FROM codemode_executions e{}
    WHERE e.runtime = $1 AND e.id IN (SELECT id FROM {removed})
    ON CONFLICT (runtime, id) DO UPDATE SET
        status = EXCLUDED.status, connectors = EXCLUDED.connectors,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
        decisions = EXCLUDED.decisions, traceparent = EXCLUDED.traceparent,
        entry_seqs = EXCLUDED.entry_seqs, entry_connectors = EXCLUDED.entry_connectors,
        entry_methods = EXCLUDED.entry_methods, entry_args = EXCLUDED.entry_args,
        entry_approvals = EXCLUDED.entry_approvals,
        entry_ephemerals = EXCLUDED.entry_ephemerals, entry_states = EXCLUDED.entry_states,
        entry_approved_args = EXCLUDED.entry_approved_args,
        entry_decisions = EXCLUDED.entry_decisions, entry_delivered = EXCLUDED.entry_delivered,
        entry_read_onlys = EXCLUDED.entry_read_onlys",
        codec::AUDIT_LOG_JOIN
    )
}

/// A statement (for a common table expression) deleting the archive rows of `$1` last
/// updated before `before` (a parameter), when `taken` (a prune's lock) holds.
pub(crate) fn expire_sql(before: &str, taken: &str) -> String {
    format!(
        "DELETE FROM codemode_audit_archive
    WHERE {taken} AND runtime = $1 AND updated_at < {before}::bigint"
    )
}

/// Archive rows in the window, in the columns [`codec::execution`] decodes (the results
/// and errors as arrays of NULL, one per entry).
const WINDOW: &str = "
SELECT id, '' AS code, status, NULL::text AS result, NULL::text AS error, '[]' AS logs,
       connectors, created_at, updated_at, decisions, entry_seqs, entry_connectors,
       entry_methods, entry_args,
       array_fill(NULL::text, ARRAY[coalesce(cardinality(entry_seqs), 0)]),
       array_fill(NULL::text, ARRAY[coalesce(cardinality(entry_seqs), 0)]),
       entry_approvals, entry_ephemerals, entry_states, entry_approved_args, entry_decisions,
       entry_delivered,
       coalesce(entry_read_onlys,
                array_fill(false, ARRAY[coalesce(cardinality(entry_seqs), 0)])),
       traceparent
FROM codemode_audit_archive
WHERE runtime = $1 AND created_at < $3 AND updated_at >= $2
ORDER BY created_at, id
LIMIT $4";

/// The archived audit records of `[since_ms, until_ms)`, oldest first, at most `limit`.
pub(crate) async fn window(
    client: &Client,
    loc: &str,
    runtime: &str,
    since_ms: i64,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<Execution>, StoreError> {
    let stmt = client
        .prepare_cached(WINDOW)
        .await
        .ctx(loc, "preparing a read of archived audit records")?;
    let rows = client
        .query(&stmt, &[&runtime, &since_ms, &until_ms, &limit])
        .await
        .ctx(loc, "reading archived audit records")?;
    rows.iter().map(codec::execution).collect()
}
