//! The schema, its version marker, and the migrations that run on open.

use crate::codec::Ctx;
use codemode::StoreError;
use rusqlite::{Connection, TransactionBehavior};

/// `PRAGMA application_id` of a codemode database: the bytes `CoMo`.
pub const APPLICATION_ID: i32 = 0x436f_4d6f;

/// Migration `i` takes the schema from version `i` to `i + 1` (`PRAGMA user_version`).
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13];

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Version 1: executions, their log entries, and snippets, all keyed by runtime name.
const V1: &str = "
CREATE TABLE executions (
    pk             INTEGER PRIMARY KEY,
    runtime        TEXT NOT NULL,
    id             TEXT NOT NULL,
    code           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN
                     ('running', 'paused', 'completed', 'error', 'rejected', 'rolled_back')),
    result         TEXT,
    error          TEXT,
    logs           TEXT NOT NULL,
    connectors     TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    lease_owner    TEXT,
    lease_until_ms INTEGER,
    UNIQUE (runtime, id)
);
CREATE INDEX executions_by_age ON executions (runtime, created_at, pk);
CREATE TABLE log_entries (
    runtime           TEXT NOT NULL,
    execution_id      TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    connector         TEXT NOT NULL,
    method            TEXT NOT NULL,
    args              TEXT NOT NULL,
    result            TEXT,
    error             TEXT,
    requires_approval INTEGER NOT NULL,
    ephemeral         INTEGER NOT NULL,
    state             TEXT NOT NULL CHECK (state IN
                        ('executing', 'applied', 'pending', 'reverted', 'error')),
    PRIMARY KEY (runtime, execution_id, seq)
) WITHOUT ROWID;
CREATE TABLE snippets (
    runtime      TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    code         TEXT NOT NULL,
    saved_at     INTEGER NOT NULL,
    input_schema TEXT,
    connectors   TEXT NOT NULL,
    PRIMARY KEY (runtime, name)
) WITHOUT ROWID;
";

/// Version 2: an index of terminal executions only, so the prune on every insert walks the
/// `keep` newest of them instead of every execution (paused ones can pile up for a day).
const V2: &str = "
CREATE INDEX executions_terminal ON executions (runtime, created_at, pk)
    WHERE status IN ('completed', 'error', 'rejected', 'rolled_back');
";

/// Version 3: the `cancelled` status (the table is rebuilt, as SQLite cannot change a CHECK
/// constraint), the decisions people made (on executions and entries, JSON arrays; NULL for
/// none) and the arguments a person approved in place of the model's.
const V3: &str = "
CREATE TABLE executions_v3 (
    pk             INTEGER PRIMARY KEY,
    runtime        TEXT NOT NULL,
    id             TEXT NOT NULL,
    code           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'paused', 'completed', 'error',
                                                   'rejected', 'rolled_back', 'cancelled')),
    result         TEXT,
    error          TEXT,
    logs           TEXT NOT NULL,
    connectors     TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    lease_owner    TEXT,
    lease_until_ms INTEGER,
    decisions      TEXT,
    UNIQUE (runtime, id)
);
INSERT INTO executions_v3 (pk, runtime, id, code, status, result, error, logs, connectors,
                           created_at, updated_at, lease_owner, lease_until_ms)
SELECT pk, runtime, id, code, status, result, error, logs, connectors, created_at, updated_at,
       lease_owner, lease_until_ms
FROM executions;
DROP TABLE executions;
ALTER TABLE executions_v3 RENAME TO executions;
CREATE INDEX executions_by_age ON executions (runtime, created_at, pk);
CREATE INDEX executions_terminal ON executions (runtime, created_at, pk)
    WHERE status IN ('completed', 'error', 'rejected', 'rolled_back', 'cancelled');
ALTER TABLE log_entries ADD COLUMN approved_args TEXT;
ALTER TABLE log_entries ADD COLUMN decisions TEXT;
";

/// Version 4: each log entry's position in the order results reached the sandbox.
const V4: &str = "
ALTER TABLE log_entries ADD COLUMN delivered INTEGER;
";

/// Version 5: workspace files (text, keyed by workspace and normalised path) and the undo
/// record of each keyed change: what the file held before, for a rollback to put back.
const V5: &str = "
CREATE TABLE workspace_files (
    workspace  TEXT NOT NULL,
    path       TEXT NOT NULL,
    content    TEXT NOT NULL,
    size       INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (workspace, path)
);
CREATE TABLE workspace_changes (
    workspace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    path       TEXT NOT NULL,
    previous   TEXT,
    existed    INTEGER NOT NULL,
    size_after INTEGER,
    reverted   INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL,
    UNIQUE (workspace, key)
);
";

/// Version 6: the execution of each undo record (its key up to the last `:`), so deleting
/// or pruning an execution deletes the undo records of its workspace changes too.
const V6: &str = "
ALTER TABLE workspace_changes ADD COLUMN execution_id TEXT;
UPDATE workspace_changes
    SET execution_id = substr(rtrim(key, '0123456789'), 1, length(rtrim(key, '0123456789')) - 1)
    WHERE rtrim(key, '0123456789') LIKE '%:';
CREATE INDEX workspace_changes_by_execution ON workspace_changes (execution_id);
";

/// Version 7: the trace context of each execution's first pass (a W3C `traceparent`),
/// which later passes continue; NULL when the host does not trace.
const V7: &str = "
ALTER TABLE executions ADD COLUMN traceparent TEXT;
";

/// Version 8: an index of paused executions, so that a page of pending actions starts at its
/// place instead of walking past every execution newer than it.
const V8: &str = "
CREATE INDEX executions_paused ON executions (runtime, created_at, pk) WHERE status = 'paused';
";

/// Version 9: the status and state checks, and the terminal index's condition, spelled as
/// equalities joined by OR instead of `IN (...)`: SQLite evaluates a constant `IN` list of
/// more than two values by building a temporary table, once for each row written, so every
/// insert, update and delete of an execution built up to three (about a sixth of a trivial
/// run's CPU). Same rules; the tables are copied into new ones, as SQLite changes a check.
const V9: &str = "
CREATE TABLE executions_v9 (
    pk             INTEGER PRIMARY KEY,
    runtime        TEXT NOT NULL,
    id             TEXT NOT NULL,
    code           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status = 'running' OR status = 'paused'
                     OR status = 'completed' OR status = 'error' OR status = 'rejected'
                     OR status = 'rolled_back' OR status = 'cancelled'),
    result         TEXT,
    error          TEXT,
    logs           TEXT NOT NULL,
    connectors     TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    lease_owner    TEXT,
    lease_until_ms INTEGER,
    decisions      TEXT,
    traceparent    TEXT,
    UNIQUE (runtime, id)
);
INSERT INTO executions_v9 (pk, runtime, id, code, status, result, error, logs, connectors,
                           created_at, updated_at, lease_owner, lease_until_ms, decisions,
                           traceparent)
SELECT pk, runtime, id, code, status, result, error, logs, connectors, created_at, updated_at,
       lease_owner, lease_until_ms, decisions, traceparent
FROM executions;
DROP TABLE executions;
ALTER TABLE executions_v9 RENAME TO executions;
CREATE INDEX executions_by_age ON executions (runtime, created_at, pk);
CREATE INDEX executions_terminal ON executions (runtime, created_at, pk)
    WHERE status = 'completed' OR status = 'error' OR status = 'rejected'
       OR status = 'rolled_back' OR status = 'cancelled';
CREATE INDEX executions_paused ON executions (runtime, created_at, pk) WHERE status = 'paused';
CREATE TABLE log_entries_v9 (
    runtime           TEXT NOT NULL,
    execution_id      TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    connector         TEXT NOT NULL,
    method            TEXT NOT NULL,
    args              TEXT NOT NULL,
    result            TEXT,
    error             TEXT,
    requires_approval INTEGER NOT NULL,
    ephemeral         INTEGER NOT NULL,
    state             TEXT NOT NULL CHECK (state = 'executing' OR state = 'applied'
                        OR state = 'pending' OR state = 'reverted' OR state = 'error'),
    approved_args     TEXT,
    decisions         TEXT,
    delivered         INTEGER,
    PRIMARY KEY (runtime, execution_id, seq)
) WITHOUT ROWID;
INSERT INTO log_entries_v9 (runtime, execution_id, seq, connector, method, args, result, error,
                            requires_approval, ephemeral, state, approved_args, decisions,
                            delivered)
SELECT runtime, execution_id, seq, connector, method, args, result, error, requires_approval,
       ephemeral, state, approved_args, decisions, delivered
FROM log_entries;
DROP TABLE log_entries;
ALTER TABLE log_entries_v9 RENAME TO log_entries;
";

/// Version 10: the bytes each undo record holds (the previous content it keeps), which the
/// workspace quota counts, with an index that sums them without reading the records.
const V10: &str = "
ALTER TABLE workspace_changes ADD COLUMN undo_size INTEGER NOT NULL DEFAULT 0;
UPDATE workspace_changes SET undo_size = length(CAST(previous AS BLOB))
    WHERE previous IS NOT NULL;
CREATE INDEX workspace_changes_undo ON workspace_changes (workspace, undo_size);
";

/// Version 11: the audit archive, the audit record (JSON, as an audit export reads it) of
/// each execution pruned or deleted, kept until it is older than the audit retention.
const V11: &str = "
CREATE TABLE audit_archive (
    runtime    TEXT NOT NULL,
    id         TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (runtime, id)
) WITHOUT ROWID;
CREATE INDEX audit_archive_by_creation ON audit_archive (runtime, created_at);
CREATE INDEX audit_archive_by_update ON audit_archive (runtime, updated_at);
";

/// Version 12: whether each log entry's tool was read-only. Entries recorded before count as
/// writes (the safe side): retention keeps an execution with an applied write, approved or
/// not, until it is older than the minimum age, so that it can still be rolled back.
const V12: &str = "
ALTER TABLE log_entries ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0;
";

/// Version 13: each execution's clock tape (JSON: the clock readings its passes took and where
/// its steps ended, which later passes replay); NULL when nothing was recorded.
const V13: &str = "
ALTER TABLE executions ADD COLUMN clock TEXT;
";

/// Refuses a database that is not ours or is newer than this build, before anything is written.
pub(crate) fn identify(
    location: &str,
    application_id: i32,
    version: i64,
    tables: &[String],
) -> Result<(), StoreError> {
    let ours = application_id == APPLICATION_ID;
    if !ours && (application_id != 0 || version != 0 || !tables.is_empty()) {
        let mut shown = tables
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if tables.len() > 5 {
            shown.push_str(", ...");
        }
        return Err(StoreError::Corrupt {
            location: location.to_string(),
            detail: format!(
                "it is a SQLite database of another application (application_id {application_id}, \
                 user_version {version}, tables: {})",
                if shown.is_empty() { "none" } else { &shown }
            ),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(newer(location, version));
    }
    if version < 0 {
        return Err(StoreError::Corrupt {
            location: location.to_string(),
            detail: format!("invalid schema version {version}"),
        });
    }
    Ok(())
}

/// Brings the schema up to [`SCHEMA_VERSION`], one migration per transaction. The version is
/// read again inside each transaction, so two processes opening a new file at once are safe.
pub(crate) fn migrate(conn: &mut Connection, location: &str) -> Result<(), StoreError> {
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx(location, "starting a migration")?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .ctx(location, "reading the schema version")?;
        if version > SCHEMA_VERSION {
            return Err(newer(location, version));
        }
        let Some(step) = usize::try_from(version)
            .ok()
            .and_then(|v| MIGRATIONS.get(v))
        else {
            return Ok(());
        };
        tx.execute_batch(step)
            .ctx(location, "running a schema migration")?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .ctx(location, "writing the application id")?;
        tx.pragma_update(None, "user_version", version + 1)
            .ctx(location, "writing the schema version")?;
        tx.commit().ctx(location, "committing a migration")?;
        tracing::info!(
            location,
            from = version,
            to = version + 1,
            "migrated the codemode store"
        );
    }
}

fn newer(location: &str, found: i64) -> StoreError {
    StoreError::NewerSchema {
        location: location.to_string(),
        found,
        supported: SCHEMA_VERSION,
    }
}
