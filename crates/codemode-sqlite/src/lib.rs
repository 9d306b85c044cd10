//! The Code Mode [`Store`] on SQLite: one embedded file, WAL, migrations on open.
//!
//! [`SqliteStore::open`] opens (or creates) one database file. Every table is keyed by the
//! runtime name, so runtimes with different names share the file but never each other's
//! history. Every status change is a compare-and-set inside one `BEGIN IMMEDIATE`
//! transaction, so two processes (say the CLI and a server) can share one file.
//!
//! # Durability
//! By default the file runs in WAL mode with `synchronous=NORMAL`: a committed write survives
//! a crash of the process (the WAL is in the OS page cache), but the last commits may be lost
//! if the machine itself loses power. [`SqliteOptions::synchronous_full`] makes every commit
//! wait for `fsync`, which survives power loss at several times the cost per commit.
//!
//! # Why the async methods do their work inline
//! The connection sits behind a `std::sync::Mutex` and each `Store` method runs its SQL
//! directly inside the `async fn`. A statement here costs microseconds; handing it to
//! `spawn_blocking` would cost a thread hand-off (tens of µs) that is larger than the work.
//! The lock is held only for the duration of one method, never across an `.await`.
//!
//! # Tables of your own in the same file
//! A connector that keeps its state in the store's file should reach it through
//! [`SqliteStore::with_connection`] rather than a second connection: in WAL mode, each
//! connection drops its whole page cache whenever another one has written, so two writers
//! taking turns would each reload the pages the other touched.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]
#![warn(missing_docs)]

mod codec;
mod commit;
mod entries;
mod executions;
mod files;
mod open;
mod schema;
mod snippets;
mod tx;

use async_trait::async_trait;
use codemode::{
    Claim, Commit, Deletion, Execution, ExecutionStatus, FileChange, FileChangeOutcome, FileInfo,
    Lease, PendingAction, Snippet, Store, StoreError, StoredFile, WorkspaceUsage,
};
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

pub use open::SqliteOptions;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

/// A [`Store`] kept in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    location: String,
}

impl SqliteStore {
    /// Opens or creates the database at `path` with the default [`SqliteOptions`].
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, &SqliteOptions::default())
    }

    /// Opens or creates the database at `path`: checks that it is ours, switches it to WAL
    /// and runs any pending schema migration.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let location = path.display().to_string();
        let conn = open::open(path, &location, options)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            location,
        })
    }

    /// Runs `f` on the store's own connection, under the lock every store method takes, for
    /// tables of the caller's own in the same file. `f` must not call the store (the lock is
    /// not re-entrant); a transaction it leaves open is rolled back when it returns.
    pub fn with_connection<T>(&self, f: impl FnOnce(&mut Connection) -> T) -> T {
        let mut conn = self.lock();
        let out = f(&mut conn);
        match roll_back_open(&conn) {
            Ok(false) => {}
            Ok(true) => {
                tracing::warn!(store = %self.location, "with_connection left a transaction open; rolled back")
            }
            Err(e) => tracing::warn!(store = %self.location, error = %e, "rolling back failed"),
        }
        out
    }

    /// The path the store was opened from.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Runs `f` on the connection, under the lock (a poisoned one is recovered: see `lock`).
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection, &str) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        f(&mut self.lock(), &self.location)
    }

    /// Locks the connection. After a panic under the lock, a transaction left open (by
    /// `with_connection`'s caller; the store's own roll back on drop) is rolled back first.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|poisoned| {
            let conn = poisoned.into_inner();
            let _ = roll_back_open(&conn);
            conn
        })
    }
}

/// Rolls back the transaction open on `conn`, if any; says whether there was one.
fn roll_back_open(conn: &Connection) -> rusqlite::Result<bool> {
    if conn.is_autocommit() {
        return Ok(false);
    }
    conn.execute_batch("ROLLBACK").map(|()| true)
}

#[async_trait]
impl Store for SqliteStore {
    async fn insert_execution(
        &self,
        runtime: &str,
        execution: &Execution,
        lease: &Lease,
        keep: usize,
    ) -> Result<usize, StoreError> {
        self.with(|c, loc| executions::insert(c, loc, runtime, execution, lease, keep))
    }

    async fn execution(&self, runtime: &str, id: &str) -> Result<Option<Execution>, StoreError> {
        self.with(|c, loc| executions::get(c, loc, runtime, id))
    }

    async fn executions(
        &self,
        runtime: &str,
        limit: Option<usize>,
        status: Option<ExecutionStatus>,
    ) -> Result<Vec<Execution>, StoreError> {
        self.with(|c, loc| executions::list(c, loc, runtime, limit, status))
    }

    async fn commit(&self, runtime: &str, commit: &Commit) -> Result<bool, StoreError> {
        self.with(|c, loc| commit::commit(c, loc, runtime, commit))
    }

    async fn claim(
        &self,
        runtime: &str,
        id: &str,
        from: ExecutionStatus,
        lease: &Lease,
        now_ms: i64,
        available: &[String],
    ) -> Result<Claim, StoreError> {
        self.with(|c, loc| commit::claim(c, loc, runtime, id, from, lease, now_ms, available))
    }

    async fn hold(
        &self,
        runtime: &str,
        id: &str,
        from: ExecutionStatus,
        lease: &Lease,
        now_ms: i64,
    ) -> Result<Claim, StoreError> {
        self.with(|c, loc| commit::hold(c, loc, runtime, id, from, lease, now_ms))
    }

    async fn release(&self, runtime: &str, id: &str, owner: &str) -> Result<bool, StoreError> {
        self.with(|c, loc| commit::release(c, loc, runtime, id, owner))
    }

    async fn delete_execution(
        &self,
        runtime: &str,
        id: &str,
        now_ms: i64,
    ) -> Result<Deletion, StoreError> {
        self.with(|c, loc| executions::delete(c, loc, runtime, id, now_ms))
    }

    async fn prune_executions(&self, runtime: &str, keep: usize) -> Result<usize, StoreError> {
        self.with(|c, loc| executions::prune(c, loc, runtime, keep))
    }

    async fn stale_executions(
        &self,
        runtime: &str,
        before_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<(String, ExecutionStatus)>, StoreError> {
        self.with(|c, loc| executions::stale(c, loc, runtime, before_ms, now_ms))
    }

    async fn pending(
        &self,
        runtime: &str,
        id: Option<&str>,
    ) -> Result<Vec<PendingAction>, StoreError> {
        self.with(|c, loc| executions::pending(c, loc, runtime, id))
    }

    async fn put_snippet(&self, runtime: &str, snippet: &Snippet) -> Result<(), StoreError> {
        self.with(|c, loc| snippets::put(c, loc, runtime, snippet))
    }

    async fn snippet(&self, runtime: &str, name: &str) -> Result<Option<Snippet>, StoreError> {
        self.with(|c, loc| snippets::get(c, loc, runtime, name))
    }

    async fn snippets(&self, runtime: &str) -> Result<Vec<Snippet>, StoreError> {
        self.with(|c, loc| snippets::list(c, loc, runtime))
    }

    async fn delete_snippet(&self, runtime: &str, name: &str) -> Result<bool, StoreError> {
        self.with(|c, loc| snippets::delete(c, loc, runtime, name))
    }

    async fn change_file(&self, change: &FileChange) -> Result<FileChangeOutcome, StoreError> {
        self.with(|c, loc| files::change(c, loc, change))
    }

    async fn revert_file_change(
        &self,
        workspace: &str,
        key: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        self.with(|c, loc| files::revert(c, loc, workspace, key, at_ms))
    }

    async fn read_file(
        &self,
        workspace: &str,
        path: &str,
    ) -> Result<Option<StoredFile>, StoreError> {
        self.with(|c, loc| files::read(c, loc, workspace, path))
    }

    async fn list_files(&self, workspace: &str, prefix: &str) -> Result<Vec<FileInfo>, StoreError> {
        self.with(|c, loc| files::list(c, loc, workspace, prefix))
    }

    async fn workspaces(&self) -> Result<Vec<WorkspaceUsage>, StoreError> {
        self.with(files::workspaces)
    }
}
