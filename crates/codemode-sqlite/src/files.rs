//! Workspace files, keyed by (workspace, path), and the undo records of keyed changes.

use crate::codec::Ctx;
use codemode::files::{apply_op, check_limits_with_undo};
use codemode::{FileChange, FileChangeOutcome, FileInfo, StoreError, StoredFile, WorkspaceUsage};
use rusqlite::{params, Connection, OptionalExtension, Row};

fn size(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn info(r: &Row<'_>) -> rusqlite::Result<FileInfo> {
    Ok(FileInfo {
        path: r.get(0)?,
        size: size(r.get(1)?),
        updated_at: r.get(2)?,
    })
}

/// Bytes the workspace's files and the undo records of its keyed changes hold: the quota
/// counts both (the undo sum reads the index `workspace_changes_undo` alone).
fn used(tx: &Connection, loc: &str, workspace: &str) -> Result<u64, StoreError> {
    let n: i64 = tx
        .prepare_cached(
            "SELECT (SELECT COALESCE(SUM(size), 0) FROM workspace_files WHERE workspace = ?1)
                  + (SELECT COALESCE(SUM(undo_size), 0) FROM workspace_changes
                     WHERE workspace = ?1)",
        )
        .and_then(|mut s| s.query_row(params![workspace], |r| r.get(0)))
        .ctx(loc, "measuring a workspace")?;
    Ok(size(n))
}

fn current(
    tx: &Connection,
    loc: &str,
    workspace: &str,
    path: &str,
) -> Result<Option<String>, StoreError> {
    tx.prepare_cached("SELECT content FROM workspace_files WHERE workspace = ?1 AND path = ?2")
        .and_then(|mut s| {
            s.query_row(params![workspace, path], |r| r.get(0))
                .optional()
        })
        .ctx(loc, "reading a workspace file")
}

/// Sets a file's content, or removes it for `None`.
fn put(
    tx: &Connection,
    loc: &str,
    workspace: &str,
    path: &str,
    content: Option<&str>,
    at_ms: i64,
) -> Result<(), StoreError> {
    match content {
        Some(text) => tx
            .prepare_cached(
                "INSERT INTO workspace_files (workspace, path, content, size, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (workspace, path) DO UPDATE SET
                     content = excluded.content, size = excluded.size,
                     updated_at = excluded.updated_at",
            )
            .and_then(|mut s| s.execute(params![workspace, path, text, text.len() as i64, at_ms])),
        None => tx
            .prepare_cached("DELETE FROM workspace_files WHERE workspace = ?1 AND path = ?2")
            .and_then(|mut s| s.execute(params![workspace, path])),
    }
    .ctx(loc, "writing a workspace file")?;
    Ok(())
}

/// Applies one change: limits checked, file written and undo kept in one transaction.
pub(crate) fn change(
    tx: &Connection,
    loc: &str,
    change: &FileChange,
) -> Result<FileChangeOutcome, StoreError> {
    let ws = change.workspace.as_str();
    if let Some(key) = &change.key {
        let seen: Option<(i64, Option<i64>)> = tx
            .prepare_cached(
                "SELECT existed, size_after FROM workspace_changes WHERE workspace = ?1 AND key = ?2",
            )
            .and_then(|mut s| {
                s.query_row(params![ws, key], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .ctx(loc, "reading a workspace change")?;
        if let Some((existed, size_after)) = seen {
            return Ok(FileChangeOutcome::Applied {
                size: size_after.map(size),
                existed: existed != 0,
                used_bytes: used(tx, loc, ws)?,
                repeated: true,
            });
        }
    }
    let old = current(tx, loc, ws, &change.path)?;
    let new = apply_op(old.as_deref(), &change.op);
    let old_size = old.as_ref().map_or(0, |t| t.len() as u64);
    let new_size = new.as_ref().map(|t| t.len() as u64);
    let needed = match check_limits_with_undo(change, old_size, used(tx, loc, ws)?, new_size) {
        Ok(needed) => needed,
        Err(refused) => return Ok(refused),
    };
    put(tx, loc, ws, &change.path, new.as_deref(), change.at_ms)?;
    if let Some(key) = &change.key {
        tx.prepare_cached(
            "INSERT INTO workspace_changes
                 (workspace, key, path, previous, existed, size_after, reverted, at_ms,
                  execution_id, undo_size)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9)",
        )
        .and_then(|mut s| {
            s.execute(params![
                ws,
                key,
                change.path,
                old,
                old.is_some(),
                new_size.map(signed),
                change.at_ms,
                change.execution_id(),
                signed(old_size)
            ])
        })
        .ctx(loc, "recording a workspace change")?;
    }
    Ok(FileChangeOutcome::Applied {
        size: new_size,
        existed: old.is_some(),
        used_bytes: needed,
        repeated: false,
    })
}

/// Puts back what a keyed change replaced; false when unknown or reverted already.
pub(crate) fn revert(
    tx: &Connection,
    loc: &str,
    workspace: &str,
    key: &str,
    at_ms: i64,
) -> Result<bool, StoreError> {
    let undo: Option<(String, Option<String>)> = tx
        .prepare_cached(
            "SELECT path, previous FROM workspace_changes
             WHERE workspace = ?1 AND key = ?2 AND reverted = 0",
        )
        .and_then(|mut s| {
            s.query_row(params![workspace, key], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .ctx(loc, "reading a workspace change")?;
    let Some((path, previous)) = undo else {
        return Ok(false);
    };
    put(tx, loc, workspace, &path, previous.as_deref(), at_ms)?;
    tx.prepare_cached(
        "UPDATE workspace_changes SET reverted = 1, previous = NULL, undo_size = 0
         WHERE workspace = ?1 AND key = ?2",
    )
    .and_then(|mut s| s.execute(params![workspace, key]))
    .ctx(loc, "recording a workspace revert")?;
    Ok(true)
}

/// One file with its content.
pub(crate) fn read(
    conn: &mut Connection,
    loc: &str,
    workspace: &str,
    path: &str,
) -> Result<Option<StoredFile>, StoreError> {
    conn.prepare_cached(
        "SELECT path, size, updated_at, content FROM workspace_files
         WHERE workspace = ?1 AND path = ?2",
    )
    .and_then(|mut s| {
        s.query_row(params![workspace, path], |r| {
            Ok(StoredFile {
                info: info(r)?,
                content: r.get(3)?,
            })
        })
        .optional()
    })
    .ctx(loc, "reading a workspace file")
}

/// Metadata of the files under a raw prefix, ordered by path.
pub(crate) fn list(
    conn: &mut Connection,
    loc: &str,
    workspace: &str,
    prefix: &str,
) -> Result<Vec<FileInfo>, StoreError> {
    conn.prepare_cached(
        "SELECT path, size, updated_at FROM workspace_files
         WHERE workspace = ?1 AND path >= ?2 AND substr(path, 1, length(?2)) = ?2
         ORDER BY path",
    )
    .and_then(|mut s| s.query_map(params![workspace, prefix], info)?.collect())
    .ctx(loc, "listing workspace files")
}

/// Every workspace holding a file, with its usage.
pub(crate) fn workspaces(
    conn: &mut Connection,
    loc: &str,
) -> Result<Vec<WorkspaceUsage>, StoreError> {
    conn.prepare_cached(
        "SELECT workspace, COUNT(*), COALESCE(SUM(size), 0) FROM workspace_files
         GROUP BY workspace ORDER BY workspace",
    )
    .and_then(|mut s| {
        s.query_map([], |r| {
            Ok(WorkspaceUsage {
                name: r.get(0)?,
                files: size(r.get(1)?),
                bytes: size(r.get(2)?),
            })
        })?
        .collect()
    })
    .ctx(loc, "listing workspaces")
}
