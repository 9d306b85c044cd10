//! The demo's tables in a SQLite file of their own, beside the store's.

use crate::error::{tool_error, DemoError};
use codemode::ToolError;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a statement waits for the file's write lock when another process (a `codemode
/// run` beside the server) holds it.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many writes pass between two checkpoints of the file's WAL (SQLite's automatic
/// checkpoint is off, so that none runs on a caller's thread; each runs on a blocking thread).
const CHECKPOINT_EVERY: usize = 200;

/// The demo's tables in a SQLite file of their own, on one connection.
///
/// The file is the demo's, not the store's: in WAL mode a connection drops its whole page
/// cache whenever another connection has written the file, so sharing the store's file would
/// make every commit of the store reload the pages the demo's writes touched, and the other
/// way round. Writes and reads run on the caller's thread while the connection and the
/// file's write lock are free at once, and on a blocking thread otherwise (another process
/// writes the file, or a checkpoint is due).
#[derive(Clone)]
pub struct TaskDb {
    conn: Arc<Mutex<Connection>>,
    /// Writes since the last checkpoint.
    writes: Arc<AtomicUsize>,
}

impl TaskDb {
    /// Where the demo keeps its tasks for the store at `store_path`: `NAME-demo.db` in the
    /// same directory (`codemode.db` gives `codemode-demo.db`).
    pub fn path_beside(store_path: impl AsRef<Path>) -> PathBuf {
        let store_path = store_path.as_ref();
        let stem = store_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "codemode".to_string());
        store_path.with_file_name(format!("{stem}-demo.db"))
    }

    /// Opens (or creates) the demo's SQLite file at `path` and its tables.
    pub fn open(path: impl AsRef<Path>) -> Result<TaskDb, DemoError> {
        let path = path.as_ref();
        let shown = path.display();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| DemoError(format!("cannot open {shown} for the demo tasks: {e}")))?;
        let prepared = conn
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())))
            .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", 0))
            .and_then(|()| conn.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|()| {
                conn.execute_batch(
                    "CREATE TABLE IF NOT EXISTS demo_tasks (
                         id INTEGER PRIMARY KEY AUTOINCREMENT,
                         title TEXT NOT NULL,
                         done INTEGER NOT NULL DEFAULT 0,
                         call_key TEXT UNIQUE
                     );
                     CREATE TABLE IF NOT EXISTS demo_notes (
                         id INTEGER PRIMARY KEY AUTOINCREMENT,
                         text TEXT NOT NULL,
                         call_key TEXT UNIQUE
                     );",
                )
            });
        prepared
            .map_err(|e| DemoError(format!("cannot create the demo tables in {shown}: {e}")))?;
        Ok(TaskDb {
            conn: Arc::new(Mutex::new(conn)),
            writes: Arc::default(),
        })
    }

    /// Runs `f` on the connection on a blocking thread (a statement may wait for the file's
    /// write lock), checkpointing the WAL after it when `checkpoint` is set. A transaction `f`
    /// opens is rolled back if it does not commit.
    async fn blocking<T, F>(&self, f: F, checkpoint: bool) -> Result<T, ToolError>
    where
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let conn = self.conn.clone();
        let ran = tokio::task::spawn_blocking(move || {
            // A panic under the lock left no transaction open: `Transaction` rolls back on drop.
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            let done = f(&mut conn);
            if checkpoint {
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "checkpointing the demo's WAL failed");
                }
            }
            done
        })
        .await;
        match ran {
            Ok(done) => done.map_err(tool_error),
            Err(e) => Err(tool_error(format!("a statement stopped: {e}"))),
        }
    }

    /// Runs the write `f` on this thread when the connection and the file's write lock are
    /// free at once (a commit with `synchronous=NORMAL` does not `fsync`), else, or when a
    /// checkpoint is due, on a blocking thread. `f` runs again there only if the file was
    /// busy, which it reports before anything is written.
    async fn with<T, F>(&self, f: F) -> Result<T, ToolError>
    where
        F: Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let due = self.writes.fetch_add(1, Ordering::Relaxed) + 1 >= CHECKPOINT_EVERY;
        if due {
            self.writes.store(0, Ordering::Relaxed);
            return self.blocking(f, true).await;
        }
        if let Ok(mut conn) = self.conn.try_lock() {
            let inline = conn.busy_timeout(Duration::ZERO).map(|()| f(&mut conn));
            let restored = conn.busy_timeout(BUSY_TIMEOUT);
            match (inline, restored) {
                (Ok(Err(e)), Ok(())) if is_busy(&e) => {}
                (Ok(done), Ok(())) => return done.map_err(tool_error),
                (Err(e), _) | (_, Err(e)) => return Err(tool_error(e)),
            }
        }
        self.blocking(f, false).await
    }

    /// Runs the read `f` on this thread when the connection is free (a read in WAL mode never
    /// waits for the file's write lock), else on a blocking thread.
    async fn read<T, F>(&self, f: F) -> Result<T, ToolError>
    where
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        if let Ok(mut conn) = self.conn.try_lock() {
            return f(&mut conn).map_err(tool_error);
        }
        self.blocking(f, false).await
    }

    /// Every task and note, read in one snapshot (a read transaction whose `BEGIN` and `COMMIT`
    /// are cached statements: parsing them anew cost as much as the two reads).
    pub async fn list(&self) -> Result<Value, ToolError> {
        self.read(|c| {
            c.prepare_cached("BEGIN")?.execute([])?;
            let read = (|| -> rusqlite::Result<Value> {
                let tasks = c
                    .prepare_cached("SELECT id, title, done FROM demo_tasks ORDER BY id")?
                    .query_map([], task_json)?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let notes = c
                    .prepare_cached("SELECT id, text FROM demo_notes ORDER BY id")?
                    .query_map([], note_json)?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(json!({"tasks": tasks, "notes": notes}))
            })();
            // A failed read ends its snapshot too; its error is the one reported.
            let end = c
                .prepare_cached(if read.is_ok() { "COMMIT" } else { "ROLLBACK" })
                .and_then(|mut s| s.execute([]));
            let value = read?;
            end?;
            Ok(value)
        })
        .await
    }

    /// Creates a task once per call key (a re-run after a crash finds the same task).
    pub async fn create(&self, title: &str, key: &str) -> Result<Value, ToolError> {
        let (title, key) = (title.to_owned(), key.to_owned());
        self.with(move |c| {
            insert_once(
                c,
                "INSERT INTO demo_tasks (title, call_key) VALUES (?1, ?2) ON CONFLICT(call_key) DO NOTHING RETURNING id, title, done",
                "SELECT id, title, done FROM demo_tasks WHERE call_key = ?1",
                &title,
                &key,
                task_json,
            )
        })
        .await
    }

    /// Marks a task done (or open again); an unknown id is an error the code can catch.
    pub async fn set_done(&self, id: i64, done: bool) -> Result<Value, ToolError> {
        let row = self
            .with(move |c| {
                c.prepare_cached(
                    "UPDATE demo_tasks SET done = ?2 WHERE id = ?1 RETURNING id, title, done",
                )?
                .query_row(params![id, done as i64], task_json)
                .optional()
            })
            .await?;
        row.ok_or_else(|| ToolError(format!("no task with id {id}")))
    }

    /// Deletes a task (the revert of `create_task`).
    pub async fn delete(&self, id: i64) -> Result<(), ToolError> {
        self.with(move |c| c.execute("DELETE FROM demo_tasks WHERE id = ?1", [id]))
            .await
            .map(|_| ())
    }

    /// Adds a note once per call key.
    pub async fn add_note(&self, text: &str, key: &str) -> Result<Value, ToolError> {
        let (text, key) = (text.to_owned(), key.to_owned());
        self.with(move |c| {
            insert_once(
                c,
                "INSERT INTO demo_notes (text, call_key) VALUES (?1, ?2) ON CONFLICT(call_key) DO NOTHING RETURNING id, text",
                "SELECT id, text FROM demo_notes WHERE call_key = ?1",
                &text,
                &key,
                note_json,
            )
        })
        .await
    }

    /// Removes a note (the revert of `add_note`).
    pub async fn delete_note(&self, id: i64) -> Result<(), ToolError> {
        self.with(move |c| c.execute("DELETE FROM demo_notes WHERE id = ?1", [id]))
            .await
            .map(|_| ())
    }
}

/// A `demo_tasks` row (`id, title, done`) as JSON.
fn task_json(r: &rusqlite::Row) -> rusqlite::Result<Value> {
    Ok(
        json!({"id": r.get::<_, i64>(0)?, "title": r.get::<_, String>(1)?, "done": r.get::<_, i64>(2)? != 0}),
    )
}

/// A `demo_notes` row (`id, text`) as JSON.
fn note_json(r: &rusqlite::Row) -> rusqlite::Result<Value> {
    Ok(json!({"id": r.get::<_, i64>(0)?, "text": r.get::<_, String>(1)?}))
}

/// Inserts a row once per call key: `insert` (`… ON CONFLICT DO NOTHING RETURNING` the row)
/// with `value` and `key`; when the key was used before, `select` reads the row it made.
fn insert_once(
    c: &Connection,
    insert: &str,
    select: &str,
    value: &str,
    key: &str,
    row: fn(&rusqlite::Row) -> rusqlite::Result<Value>,
) -> rusqlite::Result<Value> {
    let made = c
        .prepare_cached(insert)?
        .query_row(params![value, key], row)
        .optional()?;
    match made {
        Some(made) => Ok(made),
        None => c.prepare_cached(select)?.query_row([key], row),
    }
}

/// The file's write lock was held by another connection (`SQLITE_BUSY`): nothing was written.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::DatabaseBusy)
}
