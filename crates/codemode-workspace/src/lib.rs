//! The workspace connector `state`: durable text files kept in a [`FileStore`] (usually the
//! runtime's own store), so a model can write thousands of records to files and return a
//! summary instead.
//!
//! [`Workspace`] is one named workspace on a file store: the server reads it for a file
//! browser ([`Workspace::list`], [`Workspace::read`]) and saves a value too large to show
//! ([`Workspace::save_value`]). [`StateConnector`] puts it in the sandbox as a global:
//! `state.readFile`, `writeFile`, `readJson`, `writeJson`, `appendFile`, `list`, `glob`,
//! `stat`, `remove`. Writes are logged like every call, need no approval, and each has a
//! revert that puts the file back as it was, so rolling an execution back undoes them. On a
//! store that keeps the executions too ([`codemode::StoreWithFiles`]), what a revert needs
//! is freed when its execution is deleted or pruned.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]
#![warn(missing_docs)]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod connector;
mod kind;
mod ops;
pub mod path;

use codemode::{FileStore, StoreError};
use serde::Deserialize;
use std::sync::Arc;

pub use connector::StateConnector;
pub use kind::{WorkspaceKind, DEFAULT_HINT};
pub use ops::{Entry, EntryKind, Listing, Stat, Written};

/// The workspace used when configuration names none.
pub const DEFAULT_WORKSPACE: &str = "default";
/// The global the connector is when configuration names none.
pub const DEFAULT_CONNECTOR_NAME: &str = "state";
/// Default quota per workspace: 64 MiB.
pub const DEFAULT_QUOTA_BYTES: u64 = 64 * 1024 * 1024;
/// Default size limit per file: 8 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Default bound on the entries one `list` or `glob` returns.
pub const DEFAULT_MAX_ENTRIES: usize = 1000;

/// What `[connectors.NAME]` with `type = "workspace"` says, and the options of a
/// [`Workspace`]; every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceOptions {
    /// The workspace's name (letters, digits, `.`, `_`, `-`); `"default"`.
    pub workspace: String,
    /// The most bytes all its files may hold; 64 MiB.
    pub quota_bytes: u64,
    /// The most bytes one file may hold; 8 MiB.
    pub max_file_bytes: u64,
    /// The most entries one `list` or `glob` returns; 1,000.
    pub max_entries: usize,
}

impl Default for WorkspaceOptions {
    fn default() -> Self {
        WorkspaceOptions {
            workspace: DEFAULT_WORKSPACE.to_string(),
            quota_bytes: DEFAULT_QUOTA_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }
}

/// Why a workspace operation failed; every message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A path or pattern that is refused.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// As given.
        path: String,
        /// Why, and what to write instead.
        reason: String,
    },
    /// A workspace name that is refused.
    #[error("invalid workspace name {0:?}: use 1 to 64 letters, digits, `.`, `_` or `-`")]
    InvalidName(String),
    /// No file at the path.
    #[error(
        "no file {path} in workspace {workspace:?}; state.list({parent:?}) shows what is there"
    )]
    NotFound {
        /// The workspace.
        workspace: String,
        /// The normalised path.
        path: String,
        /// Its directory.
        parent: String,
    },
    /// A directory where a file was expected.
    #[error("{0} is a directory, not a file; state.list({0:?}) shows its files")]
    IsDirectory(String),
    /// The file is not JSON.
    #[error("{path} is not valid JSON ({detail}); read it with state.readFile")]
    NotJson {
        /// The path.
        path: String,
        /// The parser's message.
        detail: String,
    },
    /// Content the store cannot keep.
    #[error("the content contains a NUL character (U+0000); encode binary data (e.g. base64) before writing it")]
    NulInContent,
    /// A value that cannot be serialised.
    #[error("the value cannot be written as JSON: {0}")]
    Encode(String),
    /// The file would be too large; nothing was written.
    #[error("{path} would be {size} bytes, over the limit of {limit} bytes per file; nothing was written. Split the data over several files")]
    FileTooLarge {
        /// The path.
        path: String,
        /// The size it would have.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The quota would be exceeded; nothing was written.
    #[error("workspace {workspace:?} would hold {needed} bytes, over its quota of {quota} bytes ({used} used now); nothing was written. The quota counts the files and what each change by a run keeps for its rollback (the file's previous content: many changes to a large file fill it fast). Remove files you no longer need (state.remove) or write less, e.g. a new small file instead of appending to a large one; an operator frees a run's kept contents by rolling it back or deleting it (codemode prune, DELETE /api/executions/ID)")]
    OverQuota {
        /// The workspace.
        workspace: String,
        /// Bytes held now.
        used: u64,
        /// Bytes it would hold.
        needed: u64,
        /// The quota.
        quota: u64,
    },
    /// The store failed.
    #[error("the workspace store failed: {0}")]
    Store(#[from] StoreError),
}

/// One named workspace on a file store.
#[derive(Clone)]
pub struct Workspace {
    store: Arc<dyn FileStore>,
    options: WorkspaceOptions,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// The workspace `options.workspace` on `store`; refuses a bad name.
    pub fn new(
        store: Arc<dyn FileStore>,
        options: WorkspaceOptions,
    ) -> Result<Self, WorkspaceError> {
        let name = &options.workspace;
        let good = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !good {
            return Err(WorkspaceError::InvalidName(name.clone()));
        }
        Ok(Workspace { store, options })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.options.workspace
    }

    /// Its options.
    pub fn options(&self) -> &WorkspaceOptions {
        &self.options
    }

    /// The file store it lives in.
    pub fn store(&self) -> &Arc<dyn FileStore> {
        &self.store
    }

    /// The connector that puts this workspace in the sandbox as the global `state`.
    pub fn connector(&self) -> StateConnector {
        StateConnector::new(self.clone())
    }
}

/// Every workspace on `store` that holds a file, with its usage, ordered by name.
pub async fn workspaces(
    store: &dyn FileStore,
) -> Result<Vec<codemode::WorkspaceUsage>, StoreError> {
    store.workspaces().await
}
