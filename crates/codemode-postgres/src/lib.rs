//! The Code Mode [`Store`] (and [`FileStore`]) on PostgreSQL: many nodes, one state.
//!
//! [`PostgresStore::connect`] opens a pool of connections to one database and brings its
//! schema up to date. Every table is keyed by the runtime name, so runtimes with different
//! names share the database but never each other's history. Every status change is a
//! compare-and-set on the expected status (and, during a pass, on the lease owner) made in
//! the same statement as the log entries it carries, so of several nodes that approve,
//! reject or expire one execution at once exactly one wins.
//!
//! # Round trips
//! Each [`Store`] method is one SQL statement, prepared once per connection: a `commit`
//! (status CAS plus entry upserts), a `claim`, an insert with its retention prune, a read of
//! an execution with its whole log (entries aggregated into arrays) each cost one round trip.
//!
//! # Workspace files
//! The store is also the workspace connector's [`FileStore`], in the same database: the
//! statement that deletes or prunes an execution deletes the undo records of its file
//! changes too.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod archive;
mod codec;
mod commit;
mod connect;
mod entries;
mod error;
mod executions;
mod files;
mod listing;
mod schema;
pub mod scratch;
mod snippets;

use async_trait::async_trait;
use codemode::{
    Claim, Commit, Deletion, Execution, ExecutionStatus, ExecutionSummary, FileChange,
    FileChangeOutcome, FileInfo, FileStore, Lease, PendingAction, Snippet, Store, StoreError,
    StoredFile, WorkspaceUsage,
};
use deadpool_postgres::{Client, Pool};

pub use connect::{password_from_env, redact, without_password, PostgresOptions};
pub use schema::SCHEMA_VERSION;
pub use scratch::{ScratchDatabase, DEFAULT_TEST_URL};

/// A [`Store`] kept in one PostgreSQL database, shared by any number of nodes.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    location: String,
    /// How long pruning keeps applied writes and the archive keeps audit records.
    retention: codemode::RetentionAges,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
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

    /// Connects to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`) with the default
    /// [`PostgresOptions`] and migrates the schema.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        Self::connect_with(url, &PostgresOptions::default()).await
    }

    /// Connects to `url`: checks the server answers, refuses a newer schema, and runs any
    /// pending migration. Errors name the server and the cause, never the password.
    pub async fn connect_with(
        url: &str,
        options: &PostgresOptions,
    ) -> Result<PostgresStore, StoreError> {
        let (pool, location) = connect::pool(url, options)?;
        let mut client = connect::get(&pool, &location, "connecting").await?;
        schema::migrate(&mut client, &location).await?;
        drop(client);
        Ok(PostgresStore {
            pool,
            location,
            retention: codemode::RetentionAges::default(),
        })
    }

    /// The server and database, as shown in errors (without a password).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Closes the pool: later operations fail, open connections end.
    pub fn close(&self) {
        self.pool.close();
    }

    async fn client(&self) -> Result<Client, StoreError> {
        connect::get(&self.pool, &self.location, "getting a connection").await
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn insert_execution(
        &self,
        runtime: &str,
        execution: &Execution,
        lease: &Lease,
        keep: usize,
    ) -> Result<usize, StoreError> {
        let c = self.client().await?;
        let protect = (keep, self.protect_since_ms(), self.audit_since_ms());
        executions::insert(&c, &self.location, runtime, execution, lease, protect).await
    }

    async fn execution(&self, runtime: &str, id: &str) -> Result<Option<Execution>, StoreError> {
        let c = self.client().await?;
        executions::get_one(&c, &self.location, runtime, id).await
    }

    async fn executions(
        &self,
        runtime: &str,
        limit: Option<usize>,
        status: Option<ExecutionStatus>,
    ) -> Result<Vec<Execution>, StoreError> {
        let c = self.client().await?;
        executions::list(&c, &self.location, runtime, limit, status).await
    }

    async fn execution_summaries(
        &self,
        runtime: &str,
        status: Option<ExecutionStatus>,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let c = self.client().await?;
        listing::summaries(&c, &self.location, runtime, status, before, limit).await
    }

    async fn audit_executions(
        &self,
        runtime: &str,
        since_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Execution>, StoreError> {
        let c = self.client().await?;
        listing::audit(&c, &self.location, runtime, since_ms, until_ms, limit).await
    }

    async fn commit(&self, runtime: &str, commit: &Commit) -> Result<bool, StoreError> {
        let c = self.client().await?;
        commit::commit(&c, &self.location, runtime, commit).await
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
        let c = self.client().await?;
        commit::claim(
            &c,
            &self.location,
            runtime,
            id,
            from,
            lease,
            now_ms,
            available,
        )
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
        let c = self.client().await?;
        commit::hold(&c, &self.location, runtime, id, from, lease, now_ms).await
    }

    async fn release(&self, runtime: &str, id: &str, owner: &str) -> Result<bool, StoreError> {
        let c = self.client().await?;
        commit::release(&c, &self.location, runtime, id, owner).await
    }

    async fn delete_execution(
        &self,
        runtime: &str,
        id: &str,
        now_ms: i64,
    ) -> Result<Deletion, StoreError> {
        let c = self.client().await?;
        executions::delete(&c, &self.location, runtime, id, now_ms).await
    }

    async fn prune_executions(&self, runtime: &str, keep: usize) -> Result<usize, StoreError> {
        let c = self.client().await?;
        let (since, audit_since) = (self.protect_since_ms(), self.audit_since_ms());
        executions::prune(&c, &self.location, runtime, keep, since, audit_since).await
    }

    async fn stale_executions(
        &self,
        runtime: &str,
        before_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<(String, ExecutionStatus)>, StoreError> {
        let c = self.client().await?;
        executions::stale(&c, &self.location, runtime, before_ms, now_ms).await
    }

    async fn pending(
        &self,
        runtime: &str,
        id: Option<&str>,
    ) -> Result<Vec<PendingAction>, StoreError> {
        let c = self.client().await?;
        executions::pending(&c, &self.location, runtime, id).await
    }

    async fn pending_page(
        &self,
        runtime: &str,
        after: Option<(&str, u64)>,
        limit: usize,
    ) -> Result<Vec<PendingAction>, StoreError> {
        let c = self.client().await?;
        executions::pending_page(&c, &self.location, runtime, after, limit).await
    }

    async fn put_snippet(&self, runtime: &str, snippet: &Snippet) -> Result<(), StoreError> {
        let c = self.client().await?;
        snippets::put(&c, &self.location, runtime, snippet).await
    }

    async fn snippet(&self, runtime: &str, name: &str) -> Result<Option<Snippet>, StoreError> {
        let c = self.client().await?;
        snippets::get_one(&c, &self.location, runtime, name).await
    }

    async fn snippets(&self, runtime: &str) -> Result<Vec<Snippet>, StoreError> {
        let c = self.client().await?;
        snippets::list(&c, &self.location, runtime).await
    }

    async fn delete_snippet(&self, runtime: &str, name: &str) -> Result<bool, StoreError> {
        let c = self.client().await?;
        snippets::delete(&c, &self.location, runtime, name).await
    }
}

#[async_trait]
impl FileStore for PostgresStore {
    async fn change_file(&self, change: &FileChange) -> Result<FileChangeOutcome, StoreError> {
        let mut c = self.client().await?;
        files::change(&mut c, &self.location, change).await
    }

    async fn revert_file_change(
        &self,
        workspace: &str,
        key: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut c = self.client().await?;
        files::revert(&mut c, &self.location, workspace, key, at_ms).await
    }

    async fn read_file(
        &self,
        workspace: &str,
        path: &str,
    ) -> Result<Option<StoredFile>, StoreError> {
        let c = self.client().await?;
        files::read(&c, &self.location, workspace, path).await
    }

    async fn list_files(&self, workspace: &str, prefix: &str) -> Result<Vec<FileInfo>, StoreError> {
        let c = self.client().await?;
        files::list(&c, &self.location, workspace, prefix).await
    }

    async fn workspaces(&self) -> Result<Vec<WorkspaceUsage>, StoreError> {
        let c = self.client().await?;
        files::workspaces(&c, &self.location).await
    }
}
