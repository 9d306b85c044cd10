//! Workspace files: the [`FileStore`] trait and its records.
//!
//! A workspace is a named set of text files (keyed by normalised absolute POSIX paths). Its
//! files live in a [`FileStore`], a trait apart from [`Store`]: an execution store does not
//! owe it. Workspaces are named by configuration, not by runtime: two runtimes on one store
//! configured with the same workspace name share its files. The store trusts the paths it
//! is given; the connector that writes them normalises them first.

use crate::store::{Store, StoreError};
use async_trait::async_trait;

/// Where the workspace connector's files live: text files per named workspace, and the undo
/// records that put a file back as it was before a run changed it.
///
/// An execution store does not owe it. `codemode-sqlite` and `codemode-postgres` implement
/// both traits on the same database; a store that keeps executions only leaves the
/// workspace to another file store or runs without one. The file contract of
/// `codemode-conformance` (`store_contract`, the file cases) holds every implementation to
/// what these methods say.
///
/// # Undo records and executions
/// A keyed change ([`FileChange::key`], `execution:seq`) keeps what the file held before as
/// an undo record, which [`FileStore::revert_file_change`] puts back, and the workspace's
/// quota counts the record's bytes until then. The record belongs to the execution its key
/// names ([`key_execution`]). A store that implements both [`Store`] and `FileStore`
/// ([`StoreWithFiles`]) keeps that execution id with the record and deletes the record in
/// the same transaction that deletes the execution: by [`Store::delete_execution`], by
/// [`Store::prune_executions`] and by the prune of [`Store::insert_execution`]. Once the
/// execution is gone nothing can roll it back, so its records would only hold quota. A file
/// store kept apart from the executions' store sees no delete or prune: its records stay,
/// and count against the quota, until reverted.
#[async_trait]
pub trait FileStore: Send + Sync {
    /// Applies one file change in one transaction: checks the file size limit and the
    /// workspace quota (which counts undo records), writes, and (with a key) keeps what the
    /// file was before. A limit exceeded writes nothing.
    async fn change_file(&self, change: &FileChange) -> Result<FileChangeOutcome, StoreError>;

    /// Puts the file a keyed change touched back as it was before that change (removing it
    /// when it did not exist), ignoring the limits, and frees the undo record; true if it
    /// did, false when the key is unknown, was reverted already, or its execution is gone.
    async fn revert_file_change(
        &self,
        workspace: &str,
        key: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError>;

    /// One file with its content.
    async fn read_file(
        &self,
        workspace: &str,
        path: &str,
    ) -> Result<Option<StoredFile>, StoreError>;

    /// Metadata of the files whose path starts with `prefix` (the raw text), ordered by path.
    async fn list_files(&self, workspace: &str, prefix: &str) -> Result<Vec<FileInfo>, StoreError>;

    /// Every workspace that holds a file, ordered by name, with its files' usage.
    async fn workspaces(&self) -> Result<Vec<WorkspaceUsage>, StoreError>;
}

/// A store of executions that keeps workspace files in the same database, so that deleting
/// or pruning an execution deletes its undo records with it (see [`FileStore`]). Every type
/// that implements both traits is one; an `Arc<dyn StoreWithFiles>` coerces to an
/// `Arc<dyn Store>` and to an `Arc<dyn FileStore>`.
pub trait StoreWithFiles: Store + FileStore {}

impl<T: Store + FileStore> StoreWithFiles for T {}

/// One file's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Normalised absolute path (`/reports/a.json`).
    pub path: String,
    /// Size in bytes of its UTF-8 content.
    pub size: u64,
    /// Epoch ms of the last change.
    pub updated_at: i64,
}

/// One file with its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// Its metadata.
    pub info: FileInfo,
    /// Its text.
    pub content: String,
}

/// What a [`FileChange`] does to its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Replaces (or creates) the file with this text.
    Write(String),
    /// Adds this text at the end (creating the file when absent).
    Append(String),
    /// Removes the file (nothing when absent).
    Remove,
}

/// One change of one file, checked against the limits and applied in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The workspace.
    pub workspace: String,
    /// The normalised absolute path.
    pub path: String,
    /// What to do.
    pub op: FileOp,
    /// An idempotency key (`execution:seq`). With one, the store keeps what the file was
    /// before, for [`FileStore::revert_file_change`], and a change whose key was already
    /// applied is not applied again (its first outcome is returned with `repeated` set).
    /// Without one, nothing is kept. The undo record goes when the execution the key names
    /// ([`key_execution`]) is deleted or pruned, in a store that keeps both (see
    /// [`FileStore`]).
    pub key: Option<String>,
    /// The most bytes all the workspace's files may hold together after the change.
    pub quota_bytes: u64,
    /// The most bytes one file may hold after the change.
    pub max_file_bytes: u64,
    /// Epoch ms, recorded as the file's `updated_at`.
    pub at_ms: i64,
}

impl FileChange {
    /// The execution whose call made this change: [`key_execution`] of its key.
    pub fn execution_id(&self) -> Option<&str> {
        self.key.as_deref().and_then(key_execution)
    }
}

/// The execution an idempotency key (`execution:seq`) names: the text before its last `:`;
/// `None` when it has none.
pub fn key_execution(key: &str) -> Option<&str> {
    key.rsplit_once(':').map(|(execution, _)| execution)
}

/// What a [`FileChange`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChangeOutcome {
    /// The change is in the store.
    Applied {
        /// The file's size after the change; `None` when it does not exist after it.
        size: Option<u64>,
        /// Whether the file existed before the change.
        existed: bool,
        /// Bytes the workspace holds after the change.
        used_bytes: u64,
        /// The key had been applied before: nothing was written this time.
        repeated: bool,
    },
    /// Nothing written: the file would exceed the size limit.
    FileTooLarge {
        /// The size it would have.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Nothing written: the workspace would exceed its quota.
    OverQuota {
        /// Bytes the workspace holds now.
        used: u64,
        /// Bytes it would hold after the change.
        needed: u64,
        /// The quota.
        quota: u64,
    },
}

/// A workspace and how much it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceUsage {
    /// Its name.
    pub name: String,
    /// How many files it has.
    pub files: u64,
    /// Bytes its files hold together.
    pub bytes: u64,
}

/// The new content and size of a file after `op`, given its old content: the same rule for
/// every store. `None` when the file does not exist afterwards.
pub fn apply_op(old: Option<&str>, op: &FileOp) -> Option<String> {
    match op {
        FileOp::Write(text) => Some(text.clone()),
        FileOp::Append(text) => Some(format!("{}{text}", old.unwrap_or(""))),
        FileOp::Remove => None,
    }
}

/// Checks a change's limits: `old_size` is the file's size before, `used` the workspace's
/// bytes before, `new_size` the file's size after. Returns the outcome to report when a
/// limit is exceeded (a removal is never refused).
pub fn check_limits(
    change: &FileChange,
    old_size: u64,
    used: u64,
    new_size: Option<u64>,
) -> Result<u64, FileChangeOutcome> {
    let new = new_size.unwrap_or(0);
    let needed = used.saturating_sub(old_size).saturating_add(new);
    if new_size.is_some() && new > change.max_file_bytes {
        return Err(FileChangeOutcome::FileTooLarge {
            size: new,
            limit: change.max_file_bytes,
        });
    }
    if new_size.is_some() && new > old_size && needed > change.quota_bytes {
        return Err(FileChangeOutcome::OverQuota {
            used,
            needed,
            quota: change.quota_bytes,
        });
    }
    Ok(needed)
}

/// Checks a change's limits where the quota counts the undo records too: `used` is the bytes
/// the workspace's files and undo records hold before the change. A keyed change keeps the
/// file's old content (`old_size` bytes) as its undo record, so that content stays counted;
/// without a key it is freed. Returns the bytes held after the change, or the outcome to
/// report when a limit is exceeded: a change that makes the total grow past the quota is
/// refused (a removal never is).
pub fn check_limits_with_undo(
    change: &FileChange,
    old_size: u64,
    used: u64,
    new_size: Option<u64>,
) -> Result<u64, FileChangeOutcome> {
    let new = new_size.unwrap_or(0);
    let kept = if change.key.is_some() { old_size } else { 0 };
    let needed = used
        .saturating_sub(old_size)
        .saturating_add(kept)
        .saturating_add(new);
    if new_size.is_some() && new > change.max_file_bytes {
        return Err(FileChangeOutcome::FileTooLarge {
            size: new,
            limit: change.max_file_bytes,
        });
    }
    if new_size.is_some() && needed > used && needed > change.quota_bytes {
        return Err(FileChangeOutcome::OverQuota {
            used,
            needed,
            quota: change.quota_bytes,
        });
    }
    Ok(needed)
}
