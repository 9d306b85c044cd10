//! The schema, its version marker, and the migrations that run on open.

use crate::error::{map_error, Ctx};
use codemode::StoreError;
use deadpool_postgres::Client;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12];

/// The schema version this build writes and reads (`codemode_schema_version.version`).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Serialises migrations of one database across nodes (`pg_advisory_xact_lock`): `CoMo`.
const MIGRATION_LOCK: i64 = 0x436f_4d6f;

/// Version 1: the SQLite schema, with `codemode_` table names so that the database may hold
/// other applications' tables, and log entries tied to their execution by a foreign key.
/// JSON is kept as text, byte for byte as serialised (`jsonb` would reorder object keys).
const V1: &str = "
CREATE TABLE codemode_executions (
    pk             BIGSERIAL PRIMARY KEY,
    runtime        TEXT NOT NULL,
    id             TEXT NOT NULL,
    code           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN
                     ('running', 'paused', 'completed', 'error', 'rejected', 'rolled_back')),
    result         TEXT,
    error          TEXT,
    logs           TEXT NOT NULL,
    connectors     TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    lease_owner    TEXT,
    lease_until_ms BIGINT,
    UNIQUE (runtime, id)
);
CREATE INDEX codemode_executions_by_age ON codemode_executions (runtime, created_at, pk);
CREATE TABLE codemode_log_entries (
    runtime           TEXT NOT NULL,
    execution_id      TEXT NOT NULL,
    seq               BIGINT NOT NULL CHECK (seq >= 0),
    connector         TEXT NOT NULL,
    method            TEXT NOT NULL,
    args              TEXT NOT NULL,
    result            TEXT,
    error             TEXT,
    requires_approval BOOLEAN NOT NULL,
    ephemeral         BOOLEAN NOT NULL,
    state             TEXT NOT NULL CHECK (state IN
                        ('executing', 'applied', 'pending', 'reverted', 'error')),
    PRIMARY KEY (runtime, execution_id, seq),
    FOREIGN KEY (runtime, execution_id)
        REFERENCES codemode_executions (runtime, id) ON DELETE CASCADE
);
CREATE TABLE codemode_snippets (
    runtime      TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    code         TEXT NOT NULL,
    saved_at     BIGINT NOT NULL,
    input_schema TEXT,
    connectors   TEXT NOT NULL,
    PRIMARY KEY (runtime, name)
);
";

/// Version 2: an index of terminal executions only, so the prune on every insert walks the
/// `keep` newest of them instead of every execution (paused ones can pile up for a day).
const V2: &str = "
CREATE INDEX codemode_executions_terminal ON codemode_executions (runtime, created_at, pk)
    WHERE status IN ('completed', 'error', 'rejected', 'rolled_back');
";

/// Version 3: the `cancelled` status, the decisions people made (on executions and entries,
/// JSON arrays as text; NULL for none) and the arguments a person approved in place of the
/// model's.
const V3: &str = "
ALTER TABLE codemode_executions DROP CONSTRAINT IF EXISTS codemode_executions_status_check;
ALTER TABLE codemode_executions ADD CONSTRAINT codemode_executions_status_check CHECK (status IN
    ('running', 'paused', 'completed', 'error', 'rejected', 'rolled_back', 'cancelled'));
ALTER TABLE codemode_executions ADD COLUMN decisions TEXT;
ALTER TABLE codemode_log_entries ADD COLUMN approved_args TEXT, ADD COLUMN decisions TEXT;
DROP INDEX IF EXISTS codemode_executions_terminal;
CREATE INDEX codemode_executions_terminal ON codemode_executions (runtime, created_at, pk)
    WHERE status IN ('completed', 'error', 'rejected', 'rolled_back', 'cancelled');
";

/// Version 4: each log entry's position in the order results reached the sandbox.
const V4: &str = "
ALTER TABLE codemode_log_entries ADD COLUMN delivered BIGINT;
";

/// Version 5: workspace files (text, keyed by workspace and normalised path) and the undo
/// record of each keyed change: what the file held before, for a rollback to put back.
const V5: &str = "
CREATE TABLE codemode_workspace_files (
    workspace  TEXT NOT NULL,
    path       TEXT NOT NULL,
    content    TEXT NOT NULL,
    size       BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (workspace, path)
);
CREATE TABLE codemode_workspace_changes (
    workspace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    path       TEXT NOT NULL,
    previous   TEXT,
    existed    BOOLEAN NOT NULL,
    size_after BIGINT,
    reverted   BOOLEAN NOT NULL,
    at_ms      BIGINT NOT NULL,
    PRIMARY KEY (workspace, key)
);
";

/// Version 6: the execution of each undo record (its key up to the last `:`), so deleting
/// or pruning an execution deletes the undo records of its workspace changes too.
const V6: &str = "
ALTER TABLE codemode_workspace_changes ADD COLUMN execution_id TEXT;
UPDATE codemode_workspace_changes
    SET execution_id = left(rtrim(key, '0123456789'), -1)
    WHERE rtrim(key, '0123456789') LIKE '%:';
CREATE INDEX codemode_workspace_changes_by_execution
    ON codemode_workspace_changes (execution_id);
";

/// Version 7: the trace context of each execution's first pass (a W3C `traceparent`),
/// which later passes continue; NULL when the host does not trace.
const V7: &str = "
ALTER TABLE codemode_executions ADD COLUMN traceparent TEXT;
";

/// Version 8: an index of paused executions, so that a page of pending actions starts at its
/// place instead of walking past every execution newer than it.
const V8: &str = "
CREATE INDEX codemode_executions_paused ON codemode_executions (runtime, created_at, pk)
    WHERE status = 'paused';
";

/// Version 9: the bytes each undo record holds (the previous content it keeps), which the
/// workspace quota counts.
const V9: &str = "
ALTER TABLE codemode_workspace_changes ADD COLUMN undo_size BIGINT NOT NULL DEFAULT 0;
UPDATE codemode_workspace_changes SET undo_size = octet_length(previous)
    WHERE previous IS NOT NULL;
";

/// Version 10: the audit archive, the audit record of each execution pruned or deleted
/// (its row without code, result or console output, and its applied, reverted and decided
/// entries as arrays, without results or errors), kept until older than the audit retention.
const V10: &str = "
CREATE TABLE codemode_audit_archive (
    runtime             TEXT NOT NULL,
    id                  TEXT NOT NULL,
    status              TEXT NOT NULL,
    connectors          TEXT NOT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    decisions           TEXT,
    traceparent         TEXT,
    entry_seqs          BIGINT[],
    entry_connectors    TEXT[],
    entry_methods       TEXT[],
    entry_args          TEXT[],
    entry_approvals     BOOLEAN[],
    entry_ephemerals    BOOLEAN[],
    entry_states        TEXT[],
    entry_approved_args TEXT[],
    entry_decisions     TEXT[],
    entry_delivered     BIGINT[],
    PRIMARY KEY (runtime, id)
);
CREATE INDEX codemode_audit_archive_by_creation ON codemode_audit_archive (runtime, created_at);
CREATE INDEX codemode_audit_archive_by_update ON codemode_audit_archive (runtime, updated_at);
";

/// Version 11: whether each log entry's tool was read-only. Entries recorded before count as
/// writes (the safe side): retention keeps an execution with an applied write, approved or
/// not, until it is older than the minimum age, so that it can still be rolled back. The
/// archive keeps the flags too (NULL in rows archived before: read as writes).
const V11: &str = "
ALTER TABLE codemode_log_entries ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE codemode_audit_archive ADD COLUMN entry_read_onlys BOOLEAN[];
";

/// Version 12: each execution's clock tape (JSON: the clock readings its passes took and where
/// its steps ended, which later passes replay); NULL when nothing was recorded.
const V12: &str = "
ALTER TABLE codemode_executions ADD COLUMN clock TEXT;
";

const VERSION_TABLE: &str = "
CREATE TABLE IF NOT EXISTS codemode_schema_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
)";

/// Reads the version without writing anything; `None` when the version table is absent.
async fn read_version(client: &Client, loc: &str) -> Result<Option<i64>, StoreError> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('codemode_schema_version') IS NOT NULL",
            &[],
        )
        .await
        .ctx(loc, "looking for the schema version table")?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "SELECT version FROM codemode_schema_version WHERE id = 1",
            &[],
        )
        .await
        .ctx(loc, "reading the schema version")?;
    match row {
        Some(row) => Ok(Some(row.get(0))),
        None => Err(StoreError::Corrupt {
            location: loc.to_string(),
            detail: "codemode_schema_version has no row".into(),
        }),
    }
}

/// Refuses a newer schema, and brings an older one up to [`SCHEMA_VERSION`] in one
/// transaction under an advisory lock, so that nodes opening a new database at once are safe.
/// A database already at this version is only read.
pub(crate) async fn migrate(client: &mut Client, loc: &str) -> Result<(), StoreError> {
    match read_version(client, loc).await? {
        Some(v) if v == SCHEMA_VERSION => return Ok(()),
        Some(v) => check(loc, v)?,
        None => {}
    }
    let tx = client
        .transaction()
        .await
        .ctx(loc, "starting a migration")?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .ctx(loc, "waiting for the migration lock")?;
    tx.batch_execute(VERSION_TABLE)
        .await
        .ctx(loc, "creating the schema version table")?;
    let found: Option<i64> = tx
        .query_opt(
            "SELECT version FROM codemode_schema_version WHERE id = 1",
            &[],
        )
        .await
        .ctx(loc, "reading the schema version")?
        .map(|r| r.get(0));
    let mut version = found.unwrap_or(0);
    check(loc, version)?;
    while let Some(step) = usize::try_from(version)
        .ok()
        .and_then(|v| MIGRATIONS.get(v))
    {
        tx.batch_execute(step)
            .await
            .map_err(|e| map_error(loc, "running a schema migration", e))?;
        version += 1;
        tracing::info!(location = loc, to = version, "migrated the codemode store");
    }
    tx.execute(
        "INSERT INTO codemode_schema_version (id, version) VALUES (1, $1)
         ON CONFLICT (id) DO UPDATE SET version = excluded.version",
        &[&version],
    )
    .await
    .ctx(loc, "writing the schema version")?;
    tx.commit().await.ctx(loc, "committing a migration")
}

fn check(loc: &str, version: i64) -> Result<(), StoreError> {
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            location: loc.to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 0 {
        return Err(StoreError::Corrupt {
            location: loc.to_string(),
            detail: format!("invalid schema version {version}"),
        });
    }
    Ok(())
}
