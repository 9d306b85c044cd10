//! Workspace files, keyed by (workspace, path), and the undo records of keyed changes.
//!
//! A change takes a transaction-scoped advisory lock on its workspace, so the quota check
//! and the write see one state even when many nodes write to one workspace at once.

use crate::error::Ctx;
use codemode::files::{apply_op, check_limits_with_undo};
use codemode::{FileChange, FileChangeOutcome, FileInfo, StoreError, StoredFile, WorkspaceUsage};
use deadpool_postgres::{Client, GenericClient};
use tokio_postgres::Row;

fn size(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn info(row: &Row) -> FileInfo {
    FileInfo {
        path: row.get(0),
        size: size(row.get(1)),
        updated_at: row.get(2),
    }
}

/// Bytes the workspace's files and the undo records of its keyed changes hold: the quota
/// counts both.
async fn used(tx: &impl GenericClient, loc: &str, ws: &str) -> Result<u64, StoreError> {
    let row = tx
        .query_one(
            "SELECT ((SELECT COALESCE(SUM(size), 0) FROM codemode_workspace_files
                      WHERE workspace = $1)
                   + (SELECT COALESCE(SUM(undo_size), 0) FROM codemode_workspace_changes
                      WHERE workspace = $1))::BIGINT",
            &[&ws],
        )
        .await
        .ctx(loc, "measuring a workspace")?;
    Ok(size(row.get(0)))
}

/// Sets a file's content, or removes it for `None`.
async fn put(
    tx: &impl GenericClient,
    loc: &str,
    ws: &str,
    path: &str,
    content: Option<&str>,
    at_ms: i64,
) -> Result<(), StoreError> {
    match content {
        Some(text) => {
            tx.execute(
                "INSERT INTO codemode_workspace_files (workspace, path, content, size, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (workspace, path) DO UPDATE SET
                     content = excluded.content, size = excluded.size,
                     updated_at = excluded.updated_at",
                &[&ws, &path, &text, &signed(text.len() as u64), &at_ms],
            )
            .await
        }
        None => {
            tx.execute(
                "DELETE FROM codemode_workspace_files WHERE workspace = $1 AND path = $2",
                &[&ws, &path],
            )
            .await
        }
    }
    .ctx(loc, "writing a workspace file")?;
    Ok(())
}

async fn lock(tx: &impl GenericClient, loc: &str, ws: &str) -> Result<(), StoreError> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('codemode_workspace:' || $1, 0))",
        &[&ws],
    )
    .await
    .ctx(loc, "locking a workspace")?;
    Ok(())
}

/// Applies one change: limits checked, file written and undo kept in one transaction.
pub(crate) async fn change(
    client: &mut Client,
    loc: &str,
    change: &FileChange,
) -> Result<FileChangeOutcome, StoreError> {
    let ws = change.workspace.as_str();
    let tx = client
        .transaction()
        .await
        .ctx(loc, "starting a transaction")?;
    lock(&tx, loc, ws).await?;
    if let Some(key) = &change.key {
        let seen = tx
            .query_opt(
                "SELECT existed, size_after FROM codemode_workspace_changes
                 WHERE workspace = $1 AND key = $2",
                &[&ws, key],
            )
            .await
            .ctx(loc, "reading a workspace change")?;
        if let Some(row) = seen {
            let size_after: Option<i64> = row.get(1);
            return Ok(FileChangeOutcome::Applied {
                size: size_after.map(size),
                existed: row.get(0),
                used_bytes: used(&tx, loc, ws).await?,
                repeated: true,
            });
        }
    }
    let old: Option<String> = tx
        .query_opt(
            "SELECT content FROM codemode_workspace_files WHERE workspace = $1 AND path = $2",
            &[&ws, &change.path],
        )
        .await
        .ctx(loc, "reading a workspace file")?
        .map(|r| r.get(0));
    let new = apply_op(old.as_deref(), &change.op);
    let old_size = old.as_ref().map_or(0, |t| t.len() as u64);
    let new_size = new.as_ref().map(|t| t.len() as u64);
    let needed = match check_limits_with_undo(change, old_size, used(&tx, loc, ws).await?, new_size)
    {
        Ok(needed) => needed,
        Err(refused) => return Ok(refused),
    };
    put(&tx, loc, ws, &change.path, new.as_deref(), change.at_ms).await?;
    if let Some(key) = &change.key {
        tx.execute(
            "INSERT INTO codemode_workspace_changes
                 (workspace, key, path, previous, existed, size_after, reverted, at_ms,
                  execution_id, undo_size)
             VALUES ($1, $2, $3, $4, $5, $6, FALSE, $7, $8, $9)",
            &[
                &ws,
                key,
                &change.path,
                &old,
                &old.is_some(),
                &new_size.map(signed),
                &change.at_ms,
                &change.execution_id(),
                &signed(old_size),
            ],
        )
        .await
        .ctx(loc, "recording a workspace change")?;
    }
    tx.commit().await.ctx(loc, "committing a file change")?;
    Ok(FileChangeOutcome::Applied {
        size: new_size,
        existed: old.is_some(),
        used_bytes: needed,
        repeated: false,
    })
}

/// Puts back what a keyed change replaced; false when unknown or reverted already.
pub(crate) async fn revert(
    client: &mut Client,
    loc: &str,
    ws: &str,
    key: &str,
    at_ms: i64,
) -> Result<bool, StoreError> {
    let tx = client
        .transaction()
        .await
        .ctx(loc, "starting a transaction")?;
    lock(&tx, loc, ws).await?;
    let undo = tx
        .query_opt(
            "SELECT path, previous FROM codemode_workspace_changes
             WHERE workspace = $1 AND key = $2 AND NOT reverted",
            &[&ws, &key],
        )
        .await
        .ctx(loc, "reading a workspace change")?;
    let Some(row) = undo else {
        return Ok(false);
    };
    let path: String = row.get(0);
    let previous: Option<String> = row.get(1);
    put(&tx, loc, ws, &path, previous.as_deref(), at_ms).await?;
    tx.execute(
        "UPDATE codemode_workspace_changes SET reverted = TRUE, previous = NULL, undo_size = 0
         WHERE workspace = $1 AND key = $2",
        &[&ws, &key],
    )
    .await
    .ctx(loc, "recording a workspace revert")?;
    tx.commit().await.ctx(loc, "committing a file revert")?;
    Ok(true)
}

/// One file with its content.
pub(crate) async fn read(
    client: &Client,
    loc: &str,
    ws: &str,
    path: &str,
) -> Result<Option<StoredFile>, StoreError> {
    let row = client
        .query_opt(
            "SELECT path, size, updated_at, content FROM codemode_workspace_files
             WHERE workspace = $1 AND path = $2",
            &[&ws, &path],
        )
        .await
        .ctx(loc, "reading a workspace file")?;
    Ok(row.map(|r| StoredFile {
        info: info(&r),
        content: r.get(3),
    }))
}

/// Metadata of the files under a raw prefix, ordered by path.
pub(crate) async fn list(
    client: &Client,
    loc: &str,
    ws: &str,
    prefix: &str,
) -> Result<Vec<FileInfo>, StoreError> {
    let rows = client
        .query(
            "SELECT path, size, updated_at FROM codemode_workspace_files
             WHERE workspace = $1 AND starts_with(path, $2)
             ORDER BY path COLLATE \"C\"",
            &[&ws, &prefix],
        )
        .await
        .ctx(loc, "listing workspace files")?;
    Ok(rows.iter().map(info).collect())
}

/// Every workspace holding a file, with its usage.
pub(crate) async fn workspaces(
    client: &Client,
    loc: &str,
) -> Result<Vec<WorkspaceUsage>, StoreError> {
    let rows = client
        .query(
            "SELECT workspace, COUNT(*)::BIGINT, COALESCE(SUM(size), 0)::BIGINT
             FROM codemode_workspace_files GROUP BY workspace ORDER BY workspace COLLATE \"C\"",
            &[],
        )
        .await
        .ctx(loc, "listing workspaces")?;
    Ok(rows
        .iter()
        .map(|r| WorkspaceUsage {
            name: r.get(0),
            files: size(r.get(1)),
            bytes: size(r.get(2)),
        })
        .collect())
}
