//! Opening a file: identify it, switch it to WAL, check it, migrate it.

use crate::codec::Ctx;
use crate::schema;
use crate::tx::Tx;
use codemode::StoreError;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::Path;
use std::time::{Duration, Instant};

/// How a [`crate::SqliteStore`] opens its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `synchronous=FULL`: every commit waits for `fsync` and survives power loss. The default
    /// (`NORMAL` in WAL mode) survives a process crash but may lose the last commits on power loss.
    pub synchronous_full: bool,
    /// How long a write waits for another connection or process holding the write lock.
    pub busy_timeout: Duration,
    /// Runs `PRAGMA quick_check` on open to refuse a damaged or truncated file up front
    /// (reads the whole file once; cheap for the small databases retention keeps).
    pub quick_check: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous_full: false,
            busy_timeout: Duration::from_secs(5),
            quick_check: true,
        }
    }
}

/// Opens `path`, refusing foreign, damaged and newer databases before writing anything.
pub(crate) fn open(
    path: &Path,
    location: &str,
    options: &SqliteOptions,
) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).ctx(location, "opening the file")?;
    conn.busy_timeout(options.busy_timeout)
        .ctx(location, "setting the busy timeout")?;

    // One snapshot: another process may be creating the schema at this very moment.
    let snapshot = Tx::read(&conn, location)?;
    let application_id: i32 = snapshot
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .ctx(location, "reading the application id")?;
    let version: i64 = snapshot
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .ctx(location, "reading the schema version")?;
    let tables = table_names(&snapshot).ctx(location, "listing tables")?;
    snapshot.commit(location)?;
    schema::identify(location, application_id, version, &tables)?;

    let mode = switch_to_wal(&conn, location, options.busy_timeout)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Backend(format!(
            "cannot switch {location} to WAL mode (journal_mode is {mode})"
        )));
    }
    let sync = if options.synchronous_full {
        "FULL"
    } else {
        "NORMAL"
    };
    conn.pragma_update(None, "synchronous", sync)
        .ctx(location, "setting synchronous")?;
    if options.quick_check {
        quick_check(&conn, location)?;
    }
    schema::migrate(&mut conn, location)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Opens a reader's connection to a file [`open`] prepared: reads only, never writes.
pub(crate) fn open_reader(
    path: &Path,
    location: &str,
    options: &SqliteOptions,
) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ctx(location, "opening a reader")?;
    conn.busy_timeout(options.busy_timeout)
        .ctx(location, "setting the busy timeout")?;
    conn.pragma_update(None, "query_only", true)
        .ctx(location, "making a reader read-only")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Sets WAL mode. The switch needs the file to itself and SQLite reports a busy file at once
/// (the busy handler is not consulted), so it is retried until `timeout`.
fn switch_to_wal(
    conn: &Connection,
    location: &str,
    timeout: Duration,
) -> Result<String, StoreError> {
    let deadline = Instant::now() + timeout;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                ) && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            other => return other.ctx(location, "switching to WAL"),
        }
    }
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

fn quick_check(conn: &Connection, location: &str) -> Result<(), StoreError> {
    let problems = (|| {
        let mut stmt = conn.prepare("PRAGMA quick_check(5)")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<rusqlite::Result<Vec<String>>>()
    })()
    .ctx(location, "checking the file")?;
    if problems.len() == 1 && problems[0] == "ok" {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        location: location.to_string(),
        detail: format!(
            "integrity check failed: {}",
            problems.join("; ").replace('\n', "; ")
        ),
    })
}
