//! The operations on a [`Workspace`], shared by the connector and the server.

use crate::path::{glob_match, literal_prefix, normalize};
use crate::{Workspace, WorkspaceError};
use codemode::{now_ms, FileChange, FileChangeOutcome, FileInfo, FileOp, StoredFile};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a listed entry is a file or a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A file.
    File,
    /// A directory (implied by the files under it).
    Directory,
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Its last segment.
    pub name: String,
    /// Its absolute path.
    pub path: String,
    /// File or directory.
    #[serde(rename = "type")]
    pub kind: EntryKind,
    /// Bytes (of a file), or bytes of every file under it (of a directory).
    pub size: u64,
    /// Epoch ms of the last change (the newest under it, for a directory).
    pub updated_at: i64,
}

/// A bounded answer: at most `max_entries` items, and how many there were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing<T> {
    /// The items, ordered by path.
    pub entries: Vec<T>,
    /// How many there were in all.
    pub total: usize,
    /// Whether `entries` was cut.
    pub truncated: bool,
    /// When cut: what was left out and how to see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `stat` finds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stat {
    /// The normalised path.
    pub path: String,
    /// File or directory.
    #[serde(rename = "type")]
    pub kind: EntryKind,
    /// Bytes (all files under it, for a directory).
    pub size: u64,
    /// Epoch ms of the last change.
    pub updated_at: i64,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    /// The normalised path.
    pub path: String,
    /// The file's size after the write (0 after a removal).
    pub bytes: u64,
    /// Whether the file existed before.
    pub existed: bool,
}

fn bounded<T>(mut items: Vec<T>, max: usize, what: &str) -> Listing<T> {
    let total = items.len();
    let truncated = total > max;
    items.truncate(max);
    Listing {
        entries: items,
        total,
        truncated,
        note: truncated.then(|| {
            format!("showing the first {max} of {total} {what}; narrow the directory or pattern to see the rest")
        }),
    }
}

fn parent(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => path[..i].to_string(),
    }
}

fn dir_prefix(dir: &str) -> String {
    if dir == "/" {
        "/".to_string()
    } else {
        format!("{dir}/")
    }
}

impl Workspace {
    /// Normalises a path, or says why it is refused.
    pub fn normalize(&self, raw: &str) -> Result<String, WorkspaceError> {
        normalize(raw).map_err(|reason| WorkspaceError::InvalidPath {
            path: raw.to_string(),
            reason,
        })
    }

    /// One file with its content, `None` when absent.
    pub async fn read(&self, path: &str) -> Result<Option<StoredFile>, WorkspaceError> {
        let path = self.normalize(path)?;
        Ok(self.store.read_file(self.name(), &path).await?)
    }

    /// A file's text; a missing file is an error naming where to look.
    pub async fn read_text(&self, raw: &str) -> Result<String, WorkspaceError> {
        let path = self.normalize(raw)?;
        match self.store.read_file(self.name(), &path).await? {
            Some(file) => Ok(file.content),
            None if self.is_directory(&path).await? => Err(WorkspaceError::IsDirectory(path)),
            None => Err(WorkspaceError::NotFound {
                workspace: self.name().to_string(),
                parent: parent(&path),
                path,
            }),
        }
    }

    /// A file's content parsed as JSON.
    pub async fn read_json(&self, raw: &str) -> Result<Value, WorkspaceError> {
        let text = self.read_text(raw).await?;
        serde_json::from_str(&text).map_err(|e| WorkspaceError::NotJson {
            path: normalize(raw).unwrap_or_default(),
            detail: e.to_string(),
        })
    }

    /// Applies one change; `key` (an idempotency key) keeps an undo record for [`Self::revert`].
    pub async fn change(
        &self,
        raw: &str,
        op: FileOp,
        key: Option<String>,
    ) -> Result<Written, WorkspaceError> {
        let path = self.normalize(raw)?;
        if path == "/" || (op == FileOp::Remove && self.is_directory(&path).await?) {
            return Err(WorkspaceError::IsDirectory(path));
        }
        if let FileOp::Write(text) | FileOp::Append(text) = &op {
            if text.contains('\0') {
                return Err(WorkspaceError::NulInContent);
            }
        }
        let change = FileChange {
            workspace: self.name().to_string(),
            path: path.clone(),
            op,
            key,
            quota_bytes: self.options.quota_bytes,
            max_file_bytes: self.options.max_file_bytes,
            at_ms: now_ms(),
        };
        match self.store.change_file(&change).await? {
            FileChangeOutcome::Applied { size, existed, .. } => Ok(Written {
                path,
                bytes: size.unwrap_or(0),
                existed,
            }),
            FileChangeOutcome::FileTooLarge { size, limit } => {
                Err(WorkspaceError::FileTooLarge { path, size, limit })
            }
            FileChangeOutcome::OverQuota {
                used,
                needed,
                quota,
            } => Err(WorkspaceError::OverQuota {
                workspace: self.name().to_string(),
                used,
                needed,
                quota,
            }),
        }
    }

    /// Writes `value` as compact JSON.
    pub async fn write_json(
        &self,
        raw: &str,
        value: &Value,
        key: Option<String>,
    ) -> Result<Written, WorkspaceError> {
        let text =
            serde_json::to_string(value).map_err(|e| WorkspaceError::Encode(e.to_string()))?;
        self.change(raw, FileOp::Write(text), key).await
    }

    /// Puts back what the change with `key` replaced; false when there is nothing to undo.
    pub async fn revert(&self, key: &str) -> Result<bool, WorkspaceError> {
        Ok(self
            .store
            .revert_file_change(self.name(), key, now_ms())
            .await?)
    }

    /// Saves a value too large to show as `/results/{name}.json` (the name is cleaned to
    /// letters, digits, `.`, `_`, `-`) and returns its path, for a result cut short to name.
    pub async fn save_value(&self, name: &str, value: &Value) -> Result<String, WorkspaceError> {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .take(200)
            .collect();
        let path = format!(
            "/results/{}.json",
            if clean.is_empty() { "value" } else { &clean }
        );
        Ok(self.write_json(&path, value, None).await?.path)
    }

    async fn is_directory(&self, path: &str) -> Result<bool, WorkspaceError> {
        Ok(path == "/"
            || !self
                .store
                .list_files(self.name(), &dir_prefix(path))
                .await?
                .is_empty())
    }

    /// The files and directories directly in `dir`, bounded by `max_entries`.
    pub async fn list(&self, dir: &str) -> Result<Listing<Entry>, WorkspaceError> {
        let dir = self.normalize(dir)?;
        let prefix = dir_prefix(&dir);
        let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
        for file in self.store.list_files(self.name(), &prefix).await? {
            let rest = &file.path[prefix.len()..];
            let (name, kind) = match rest.split_once('/') {
                Some((name, _)) => (name, EntryKind::Directory),
                None => (rest, EntryKind::File),
            };
            let entry = entries.entry(name.to_string()).or_insert_with(|| Entry {
                name: name.to_string(),
                path: format!("{prefix}{name}"),
                kind,
                size: 0,
                updated_at: 0,
            });
            entry.size += file.size;
            entry.updated_at = entry.updated_at.max(file.updated_at);
        }
        Ok(bounded(
            entries.into_values().collect(),
            self.options.max_entries,
            "entries",
        ))
    }

    /// The paths of files matching `pattern`, bounded by `max_entries`.
    pub async fn glob(&self, pattern: &str) -> Result<Listing<String>, WorkspaceError> {
        let pattern = self.normalize(pattern)?;
        let files = self
            .store
            .list_files(self.name(), literal_prefix(&pattern))
            .await?;
        let paths = files
            .into_iter()
            .filter(|f| glob_match(&pattern, &f.path))
            .map(|f| f.path)
            .collect();
        Ok(bounded(paths, self.options.max_entries, "matches"))
    }

    /// What is at `path`: a file, a directory, or nothing.
    pub async fn stat(&self, raw: &str) -> Result<Option<Stat>, WorkspaceError> {
        let path = self.normalize(raw)?;
        if let Some(file) = self.store.read_file(self.name(), &path).await? {
            return Ok(Some(stat(EntryKind::File, path, [file.info])));
        }
        let under = self
            .store
            .list_files(self.name(), &dir_prefix(&path))
            .await?;
        if under.is_empty() && path != "/" {
            return Ok(None);
        }
        Ok(Some(stat(EntryKind::Directory, path, under)))
    }
}

fn stat(kind: EntryKind, path: String, files: impl IntoIterator<Item = FileInfo>) -> Stat {
    let (mut size, mut updated_at) = (0, 0);
    for f in files {
        size += f.size;
        updated_at = updated_at.max(f.updated_at);
    }
    Stat {
        path,
        kind,
        size,
        updated_at,
    }
}
