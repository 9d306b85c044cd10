//! The Code Mode [`Store`] (and [`FileStore`]) on SQLite: one embedded file, WAL, migrations
//! on open.
//!
//! [`SqliteStore::open`] opens (or creates) one database file. Every table is keyed by the
//! runtime name, so runtimes with different names share the file but never each other's
//! history. Every status change is a compare-and-set inside a `BEGIN IMMEDIATE`
//! transaction, so two processes (say the CLI and a server) can share one file.
//!
//! # Durability
//! By default the file runs in WAL mode with `synchronous=NORMAL`: a committed write survives
//! a crash of the process (the WAL is in the OS page cache), but the last commits may be lost
//! if the machine itself loses power. [`SqliteOptions::synchronous_full`] makes every commit
//! wait for `fsync`, which survives power loss at several times the cost per commit. A
//! `Store` method that writes returns only once the transaction holding its write committed.
//!
//! # Group commit
//! One writer thread owns the write connection. Each write (a commit, claim, insert…) is sent
//! to it with a reply channel; the thread takes every write waiting, runs each in a savepoint
//! of its own inside one `BEGIN IMMEDIATE` … `COMMIT`, and answers them all once `COMMIT`
//! returned. A write whose compare-and-set is refused writes nothing; one that fails is rolled
//! back to its savepoint alone and its caller gets its error, while the others commit. When
//! the machine is busy, concurrent executions thus share one transaction (and, with
//! `synchronous_full`, one `fsync`) instead of queueing for the write lock one by one.
//!
//! # When SQLite work runs on the caller's thread
//! A write runs on the caller's thread only when nothing there can wait: no write is queued
//! for the writer thread, the write connection is free, the file's write lock is free at once
//! (that attempt does not use the busy timeout), and the commit does not `fsync`
//! (`synchronous=NORMAL`; with [`SqliteOptions::synchronous_full`] every write goes to the
//! writer thread). It is then one short transaction of its own, with no thread hand-off: a
//! lone caller's write costs what the SQL costs. Once two writes meet (one finds another in
//! progress, or the thread takes several at once), every write goes to the writer thread for
//! 50 ms, so concurrent writes share its transactions. Checkpoints of the WAL always run on the
//! writer thread (SQLite's automatic checkpoint is off on the write connection); a write that
//! finds one running waits for it there, and is no meeting. Everything
//! else, and every write while others wait, goes to the writer thread; reads go to a reader
//! thread with a connection of its own (WAL lets it read beside the writer's open
//! transaction), so a tokio worker never waits on a lock, a busy file or a disk. A read sees
//! every write whose method returned before the read was called.
//!
//! # Workspace files
//! The store is also the workspace connector's [`FileStore`], in the same file: deleting or
//! pruning an execution deletes the undo records of its file changes in the same
//! transaction.
//!
//! # Tables of your own in the same file
//! A connector that keeps its state in the store's file opens a connection of its own (the
//! demo's tasks do): the file's write lock is taken one transaction at a time, and the
//! store's writes wait for it up to the busy timeout, as for another process.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]
#![warn(missing_docs)]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod archive;
mod codec;
mod commit;
mod entries;
mod executions;
mod files;
mod listing;
mod open;
mod readers;
mod schema;
mod snippets;
#[cfg(test)]
mod tests;
mod tx;
mod writer;

use async_trait::async_trait;
use codemode::{
    Claim, Commit, Deletion, Execution, ExecutionStatus, ExecutionSummary, FileChange,
    FileChangeOutcome, FileInfo, FileStore, Lease, PendingAction, Snippet, Store, StoreError,
    StoredFile, WorkspaceUsage,
};
use readers::Readers;
use std::path::Path;
use std::sync::Arc;
use writer::Writer;

pub use open::SqliteOptions;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

/// How many reader threads (each with a connection) a store starts.
const READERS: usize = 2;

/// A [`Store`] kept in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    readers: Readers,
    writer: Writer,
    location: Arc<str>,
    /// How long pruning keeps applied writes and the archive keeps audit records.
    retention: codemode::RetentionAges,
}

impl SqliteStore {
    /// Pruning keeps a finished execution that holds a write still applied (not
    /// reverted) until its last update is `min_age` old (default
    /// [`codemode::DEFAULT_RETENTION_MIN_AGE`]), so that it can be audited and rolled back.
    pub fn with_retention_min_age(mut self, min_age: std::time::Duration) -> Self {
        self.retention.set_min_age(min_age);
        self
    }

    /// Prunes delete the archived audit record of a pruned or deleted execution once its
    /// last update is `max_age` old (default [`codemode::DEFAULT_AUDIT_MAX_AGE`]).
    pub fn with_audit_max_age(mut self, max_age: std::time::Duration) -> Self {
        self.retention.set_audit_max_age(max_age);
        self
    }

    /// The epoch ms from which prunes keep archived audit records.
    fn audit_since_ms(&self) -> i64 {
        self.retention.audit_since_ms()
    }

    /// The epoch ms from which pruning keeps applied writes.
    fn protect_since_ms(&self) -> i64 {
        self.retention.protect_since_ms()
    }

    /// Opens or creates the database at `path` with the default [`SqliteOptions`].
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, &SqliteOptions::default())
    }

    /// Opens or creates the database at `path`: checks that it is ours, switches it to WAL
    /// and runs any pending schema migration; then starts the writer and reader threads.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let location = path.display().to_string();
        let conn = open::open(path, &location, options)?;
        let readers = (0..READERS)
            .map(|_| open::open_reader(path, &location, options))
            .collect::<Result<Vec<_>, _>>()?;
        let location: Arc<str> = location.into();
        Ok(SqliteStore {
            retention: codemode::RetentionAges::default(),
            writer: Writer::start(
                conn,
                location.clone(),
                (!options.synchronous_full).then_some(options.busy_timeout),
            )?,
            readers: Readers::start(readers, location.clone())?,
            location,
        })
    }

    /// The path the store was opened from.
    pub fn location(&self) -> &str {
        &self.location
    }
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
        let (runtime, execution, lease) = (runtime.to_owned(), execution.clone(), lease.clone());
        let protect = (keep, self.protect_since_ms(), self.audit_since_ms());
        self.writer
            .write(move |c, loc| executions::insert(c, loc, &runtime, &execution, &lease, protect))
            .await
    }

    async fn execution(&self, runtime: &str, id: &str) -> Result<Option<Execution>, StoreError> {
        let (runtime, id) = (runtime.to_owned(), id.to_owned());
        self.readers
            .read(move |c, loc| executions::get(c, loc, &runtime, &id))
            .await
    }

    async fn executions(
        &self,
        runtime: &str,
        limit: Option<usize>,
        status: Option<ExecutionStatus>,
    ) -> Result<Vec<Execution>, StoreError> {
        let runtime = runtime.to_owned();
        self.readers
            .read(move |c, loc| executions::list(c, loc, &runtime, limit, status))
            .await
    }

    async fn execution_summaries(
        &self,
        runtime: &str,
        status: Option<ExecutionStatus>,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let runtime = runtime.to_owned();
        let before = before.map(str::to_owned);
        self.readers
            .read(move |c, loc| {
                listing::summaries(c, loc, &runtime, status, before.as_deref(), limit)
            })
            .await
    }

    async fn audit_executions(
        &self,
        runtime: &str,
        since_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Execution>, StoreError> {
        let runtime = runtime.to_owned();
        self.readers
            .read(move |c, loc| listing::audit(c, loc, &runtime, since_ms, until_ms, limit))
            .await
    }

    async fn commit(&self, runtime: &str, commit: &Commit) -> Result<bool, StoreError> {
        // Checked and encoded here, so the writer thread only binds text.
        let (runtime, commit) = (runtime.to_owned(), commit::encode(commit)?);
        self.writer
            .write(move |c, loc| commit::commit(c, loc, &runtime, &commit))
            .await
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
        let (runtime, id, lease) = (runtime.to_owned(), id.to_owned(), lease.clone());
        let available = available.to_vec();
        self.writer
            .write(move |c, loc| {
                commit::claim(c, loc, &runtime, &id, from, &lease, now_ms, &available)
            })
            .await
    }

    async fn hold(
        &self,
        runtime: &str,
        id: &str,
        from: ExecutionStatus,
        lease: &Lease,
        now_ms: i64,
    ) -> Result<Claim, StoreError> {
        let (runtime, id, lease) = (runtime.to_owned(), id.to_owned(), lease.clone());
        self.writer
            .write(move |c, loc| commit::hold(c, loc, &runtime, &id, from, &lease, now_ms))
            .await
    }

    async fn release(&self, runtime: &str, id: &str, owner: &str) -> Result<bool, StoreError> {
        let (runtime, id, owner) = (runtime.to_owned(), id.to_owned(), owner.to_owned());
        self.writer
            .write(move |c, loc| commit::release(c, loc, &runtime, &id, &owner))
            .await
    }

    async fn delete_execution(
        &self,
        runtime: &str,
        id: &str,
        now_ms: i64,
    ) -> Result<Deletion, StoreError> {
        let (runtime, id) = (runtime.to_owned(), id.to_owned());
        self.writer
            .write(move |c, loc| executions::delete(c, loc, &runtime, &id, now_ms))
            .await
    }

    async fn prune_executions(&self, runtime: &str, keep: usize) -> Result<usize, StoreError> {
        let runtime = runtime.to_owned();
        let (since, audit_since) = (self.protect_since_ms(), self.audit_since_ms());
        self.writer
            .write(move |c, loc| executions::prune(c, loc, &runtime, keep, since, audit_since))
            .await
    }

    async fn stale_executions(
        &self,
        runtime: &str,
        before_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<(String, ExecutionStatus)>, StoreError> {
        let runtime = runtime.to_owned();
        self.readers
            .read(move |c, loc| executions::stale(c, loc, &runtime, before_ms, now_ms))
            .await
    }

    async fn pending(
        &self,
        runtime: &str,
        id: Option<&str>,
    ) -> Result<Vec<PendingAction>, StoreError> {
        let (runtime, id) = (runtime.to_owned(), id.map(str::to_owned));
        self.readers
            .read(move |c, loc| executions::pending(c, loc, &runtime, id.as_deref()))
            .await
    }

    async fn pending_page(
        &self,
        runtime: &str,
        after: Option<(&str, u64)>,
        limit: usize,
    ) -> Result<Vec<PendingAction>, StoreError> {
        let runtime = runtime.to_owned();
        let after = after.map(|(id, seq)| (id.to_owned(), seq));
        self.readers
            .read(move |c, loc| {
                let after = after.as_ref().map(|(id, seq)| (id.as_str(), *seq));
                executions::pending_page(c, loc, &runtime, after, limit)
            })
            .await
    }

    async fn put_snippet(&self, runtime: &str, snippet: &Snippet) -> Result<(), StoreError> {
        let (runtime, snippet) = (runtime.to_owned(), snippet.clone());
        self.writer
            .write(move |c, loc| snippets::put(c, loc, &runtime, &snippet))
            .await
    }

    async fn snippet(&self, runtime: &str, name: &str) -> Result<Option<Snippet>, StoreError> {
        let (runtime, name) = (runtime.to_owned(), name.to_owned());
        self.readers
            .read(move |c, loc| snippets::get(c, loc, &runtime, &name))
            .await
    }

    async fn snippets(&self, runtime: &str) -> Result<Vec<Snippet>, StoreError> {
        let runtime = runtime.to_owned();
        self.readers
            .read(move |c, loc| snippets::list(c, loc, &runtime))
            .await
    }

    async fn delete_snippet(&self, runtime: &str, name: &str) -> Result<bool, StoreError> {
        let (runtime, name) = (runtime.to_owned(), name.to_owned());
        self.writer
            .write(move |c, loc| snippets::delete(c, loc, &runtime, &name))
            .await
    }
}

#[async_trait]
impl FileStore for SqliteStore {
    async fn change_file(&self, change: &FileChange) -> Result<FileChangeOutcome, StoreError> {
        let change = change.clone();
        self.writer
            .write(move |c, loc| files::change(c, loc, &change))
            .await
    }

    async fn revert_file_change(
        &self,
        workspace: &str,
        key: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        let (workspace, key) = (workspace.to_owned(), key.to_owned());
        self.writer
            .write(move |c, loc| files::revert(c, loc, &workspace, &key, at_ms))
            .await
    }

    async fn read_file(
        &self,
        workspace: &str,
        path: &str,
    ) -> Result<Option<StoredFile>, StoreError> {
        let (workspace, path) = (workspace.to_owned(), path.to_owned());
        self.readers
            .read(move |c, loc| files::read(c, loc, &workspace, &path))
            .await
    }

    async fn list_files(&self, workspace: &str, prefix: &str) -> Result<Vec<FileInfo>, StoreError> {
        let (workspace, prefix) = (workspace.to_owned(), prefix.to_owned());
        self.readers
            .read(move |c, loc| files::list(c, loc, &workspace, &prefix))
            .await
    }

    async fn workspaces(&self) -> Result<Vec<WorkspaceUsage>, StoreError> {
        self.readers.read(files::workspaces).await
    }
}
