//! The built-in demo connector `tasks`, kept in its own tables of the store's database (the
//! SQLite file, or the PostgreSQL database) so that the server, the CLI and every node on one
//! PostgreSQL see the same tasks and a restart loses nothing.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod kind;

pub use kind::{DemoConfig, DemoKind, DEMO_KIND, DEMO_NAME};

use codemode::{CallContext, RustConnector, RustTool, ToolError};
use codemode_sqlite::SqliteStore;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Value};
use std::sync::Arc;

/// The demo's tables could not be opened: where, and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DemoError(String);

/// The demo's state: its own tables in the store's SQLite file, on the store's connection
/// (one writer, one page cache).
#[derive(Clone)]
pub struct TaskDb {
    store: Arc<SqliteStore>,
}

impl TaskDb {
    /// Creates the demo tables in `store`'s file if needed.
    pub fn open(store: Arc<SqliteStore>) -> Result<TaskDb, DemoError> {
        store
            .with_connection(|conn| {
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
            })
            .map_err(|e| {
                DemoError(format!(
                    "cannot create the demo tables in {}: {e}",
                    store.location()
                ))
            })?;
        Ok(TaskDb { store })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, ToolError> {
        self.store
            .with_connection(|conn| f(conn))
            .map_err(|e| ToolError(format!("tasks database: {e}")))
    }

    /// Every task and note, read in one snapshot.
    pub fn list(&self) -> Result<Value, ToolError> {
        self.with(|c| {
            let snapshot = c.unchecked_transaction()?;
            let mut s = c.prepare_cached("SELECT id, title, done FROM demo_tasks ORDER BY id")?;
            let tasks = s
                .query_map([], task_json)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut s = c.prepare_cached("SELECT id, text FROM demo_notes ORDER BY id")?;
            let notes = s
                .query_map([], note_json)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            snapshot.commit()?;
            Ok(json!({"tasks": tasks, "notes": notes}))
        })
    }

    /// Creates a task once per call key (a re-run after a crash finds the same task).
    pub fn create(&self, title: &str, key: &str) -> Result<Value, ToolError> {
        self.with(|c| {
            insert_once(
                c,
                "INSERT INTO demo_tasks (title, call_key) VALUES (?1, ?2) ON CONFLICT(call_key) DO NOTHING RETURNING id, title, done",
                "SELECT id, title, done FROM demo_tasks WHERE call_key = ?1",
                title,
                key,
                task_json,
            )
        })
    }

    /// Marks a task done; an unknown id is an error the code can catch.
    pub fn set_done(&self, id: i64, done: bool) -> Result<Value, ToolError> {
        let row = self.with(|c| {
            c.execute(
                "UPDATE demo_tasks SET done = ?2 WHERE id = ?1",
                params![id, done as i64],
            )?;
            c.query_row(
                "SELECT id, title, done FROM demo_tasks WHERE id = ?1",
                [id],
                task_json,
            )
            .optional()
        })?;
        row.ok_or_else(|| ToolError(format!("no task with id {id}")))
    }

    /// Deletes a task (the revert of `create_task`).
    pub fn delete(&self, id: i64) -> Result<(), ToolError> {
        self.with(|c| c.execute("DELETE FROM demo_tasks WHERE id = ?1", [id]))
            .map(|_| ())
    }

    /// Adds a note once per call key.
    pub fn add_note(&self, text: &str, key: &str) -> Result<Value, ToolError> {
        self.with(|c| {
            insert_once(
                c,
                "INSERT INTO demo_notes (text, call_key) VALUES (?1, ?2) ON CONFLICT(call_key) DO NOTHING RETURNING id, text",
                "SELECT id, text FROM demo_notes WHERE call_key = ?1",
                text,
                key,
                note_json,
            )
        })
    }

    /// Removes a note (the revert of `add_note`).
    pub fn delete_note(&self, id: i64) -> Result<(), ToolError> {
        self.with(|c| c.execute("DELETE FROM demo_notes WHERE id = ?1", [id]))
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

/// Where the demo keeps its tasks: the store's SQLite file or its PostgreSQL database. Both
/// keep the same semantics: a create or a note is made once per call key.
#[derive(Clone)]
pub enum Tasks {
    /// Tables in the SQLite file.
    Sqlite(TaskDb),
    /// Tables in the PostgreSQL database.
    Postgres(PgTasks),
}

impl Tasks {
    async fn list(&self) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.list(),
            Tasks::Postgres(d) => d.list().await,
        }
    }

    async fn create(&self, title: &str, key: &str) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.create(title, key),
            Tasks::Postgres(d) => d.create(title, key).await,
        }
    }

    async fn set_done(&self, id: i64, done: bool) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.set_done(id, done),
            Tasks::Postgres(d) => d.set_done(id, done).await,
        }
    }

    async fn delete(&self, id: i64) -> Result<(), ToolError> {
        match self {
            Tasks::Sqlite(d) => d.delete(id),
            Tasks::Postgres(d) => d.delete(id).await,
        }
    }

    async fn add_note(&self, text: &str, key: &str) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.add_note(text, key),
            Tasks::Postgres(d) => d.add_note(text, key).await,
        }
    }

    async fn delete_note(&self, id: i64) -> Result<(), ToolError> {
        match self {
            Tasks::Sqlite(d) => d.delete_note(id),
            Tasks::Postgres(d) => d.delete_note(id).await,
        }
    }
}

/// The demo's tables in a PostgreSQL database (a small pool of its own).
#[derive(Clone)]
pub struct PgTasks {
    pool: deadpool_postgres::Pool,
}

fn pg_err(e: impl std::fmt::Display) -> ToolError {
    ToolError(format!("tasks database: {e}"))
}

fn task_row(r: &tokio_postgres::Row) -> Value {
    json!({"id": r.get::<_, i64>(0), "title": r.get::<_, String>(1), "done": r.get::<_, bool>(2)})
}

impl PgTasks {
    /// Connects to `url` (already checked by the store) and creates the demo tables if needed,
    /// under an advisory lock so that nodes starting at once do not race.
    pub async fn open(url: &str) -> Result<PgTasks, DemoError> {
        use std::str::FromStr;
        let shown = codemode_postgres::redact(url);
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| DemoError(format!("{shown} is not a PostgreSQL URL: {e}")))?;
        codemode_postgres::password_from_env(&mut config, std::env::var("PGPASSWORD").ok());
        let manager = deadpool_postgres::Manager::from_config(
            config,
            tokio_postgres::NoTls,
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(4)
            .build()
            .map_err(|e| {
                DemoError(format!(
                    "cannot make a pool for the demo tasks on {shown}: {e}"
                ))
            })?;
        let client = pool
            .get()
            .await
            .map_err(|e| DemoError(format!("cannot connect to {shown} for the demo tasks: {e}")))?;
        client
            .batch_execute(
                "BEGIN;
                 SELECT pg_advisory_xact_lock(7357001);
                 CREATE TABLE IF NOT EXISTS demo_tasks (
                     id BIGSERIAL PRIMARY KEY,
                     title TEXT NOT NULL,
                     done BOOLEAN NOT NULL DEFAULT FALSE,
                     call_key TEXT UNIQUE
                 );
                 CREATE TABLE IF NOT EXISTS demo_notes (
                     id BIGSERIAL PRIMARY KEY,
                     text TEXT NOT NULL,
                     call_key TEXT UNIQUE
                 );
                 COMMIT;",
            )
            .await
            .map_err(|e| DemoError(format!("cannot create the demo tables on {shown}: {e}")))?;
        Ok(PgTasks { pool: pool.clone() })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, ToolError> {
        self.pool.get().await.map_err(pg_err)
    }

    async fn list(&self) -> Result<Value, ToolError> {
        let c = self.client().await?;
        let tasks = c
            .query("SELECT id, title, done FROM demo_tasks ORDER BY id", &[])
            .await
            .map_err(pg_err)?;
        let notes = c
            .query("SELECT id, text FROM demo_notes ORDER BY id", &[])
            .await
            .map_err(pg_err)?;
        let tasks: Vec<Value> = tasks.iter().map(task_row).collect();
        let notes: Vec<Value> = notes
            .iter()
            .map(|r| json!({"id": r.get::<_, i64>(0), "text": r.get::<_, String>(1)}))
            .collect();
        Ok(json!({"tasks": tasks, "notes": notes}))
    }

    async fn create(&self, title: &str, key: &str) -> Result<Value, ToolError> {
        let c = self.client().await?;
        c.execute(
            "INSERT INTO demo_tasks (title, call_key) VALUES ($1, $2) ON CONFLICT (call_key) DO NOTHING",
            &[&title, &key],
        )
        .await
        .map_err(pg_err)?;
        let row = c
            .query_one(
                "SELECT id, title, done FROM demo_tasks WHERE call_key = $1",
                &[&key],
            )
            .await
            .map_err(pg_err)?;
        Ok(task_row(&row))
    }

    async fn set_done(&self, id: i64, done: bool) -> Result<Value, ToolError> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "UPDATE demo_tasks SET done = $2 WHERE id = $1 RETURNING id, title, done",
                &[&id, &done],
            )
            .await
            .map_err(pg_err)?;
        row.map(|r| task_row(&r))
            .ok_or_else(|| ToolError(format!("no task with id {id}")))
    }

    async fn delete(&self, id: i64) -> Result<(), ToolError> {
        let c = self.client().await?;
        c.execute("DELETE FROM demo_tasks WHERE id = $1", &[&id])
            .await
            .map_err(pg_err)
            .map(|_| ())
    }

    async fn add_note(&self, text: &str, key: &str) -> Result<Value, ToolError> {
        let c = self.client().await?;
        c.execute(
            "INSERT INTO demo_notes (text, call_key) VALUES ($1, $2) ON CONFLICT (call_key) DO NOTHING",
            &[&text, &key],
        )
        .await
        .map_err(pg_err)?;
        let r = c
            .query_one(
                "SELECT id, text FROM demo_notes WHERE call_key = $1",
                &[&key],
            )
            .await
            .map_err(pg_err)?;
        Ok(json!({"id": r.get::<_, i64>(0), "text": r.get::<_, String>(1)}))
    }

    async fn delete_note(&self, id: i64) -> Result<(), ToolError> {
        let c = self.client().await?;
        c.execute("DELETE FROM demo_notes WHERE id = $1", &[&id])
            .await
            .map_err(pg_err)
            .map(|_| ())
    }
}

fn id_of(v: &Value, field: &str) -> Result<i64, ToolError> {
    v.get(field)
        .and_then(Value::as_i64)
        .ok_or_else(|| ToolError(format!("missing numeric `{field}`")))
}

fn str_of<'a>(v: &'a Value, field: &str) -> Result<&'a str, ToolError> {
    v.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError(format!("missing string `{field}`")))
}

/// The `tasks` connector over `db`.
pub fn connector(db: Tasks) -> RustConnector {
    let task_schema = json!({
        "type": "object",
        "properties": {"id": {"type": "integer"}, "title": {"type": "string"}, "done": {"type": "boolean"}},
        "required": ["id", "title", "done"]
    });
    let note_schema = json!({
        "type": "object",
        "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
        "required": ["id", "text"]
    });
    let (d1, d2, d3, d4, d5, d6, d7) = (
        db.clone(),
        db.clone(),
        db.clone(),
        db.clone(),
        db.clone(),
        db.clone(),
        db,
    );
    RustConnector::new("tasks")
        .instructions("A small to-do list kept in the codemode database. Creating and completing tasks needs a person's approval; notes do not.")
        .tool(
            RustTool::new("list_tasks", move |_args: Value, _ctx: CallContext| {
                let db = d1.clone();
                async move { db.list().await }
            })
            .description("Lists every task and note.")
            .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "tasks": {"type": "array", "items": task_schema.clone()},
                    "notes": {"type": "array", "items": note_schema.clone()}
                },
                "required": ["tasks", "notes"]
            }))
            .read_only(),
        )
        .tool(
            RustTool::new("create_task", move |args: Value, ctx: CallContext| {
                let db = d2.clone();
                async move { db.create(str_of(&args, "title")?, &ctx.idempotency_key()).await }
            })
            .description("Creates a task. Needs approval; rollback deletes it.")
            .input_schema(json!({
                "type": "object",
                "properties": {"title": {"type": "string", "minLength": 1, "description": "What to do."}},
                "required": ["title"],
                "additionalProperties": false
            }))
            .output_schema(task_schema.clone())
            .requires_approval(true)
            .revert(move |_args: Value, result: Value, _ctx: CallContext| {
                let db = d3.clone();
                async move { db.delete(id_of(&result, "id")?).await }
            }),
        )
        .tool(
            RustTool::new("complete_task", move |args: Value, _ctx: CallContext| {
                let db = d4.clone();
                async move { db.set_done(id_of(&args, "id")?, true).await }
            })
            .description("Marks a task done. Needs approval; rollback marks it open again.")
            .input_schema(json!({
                "type": "object",
                "properties": {"id": {"type": "integer", "description": "The task id."}},
                "required": ["id"],
                "additionalProperties": false
            }))
            .output_schema(task_schema)
            .requires_approval(true)
            .revert(move |args: Value, _result: Value, _ctx: CallContext| {
                let db = d5.clone();
                async move { db.set_done(id_of(&args, "id")?, false).await.map(|_| ()) }
            }),
        )
        .tool(
            RustTool::new("add_note", move |args: Value, ctx: CallContext| {
                let db = d6.clone();
                async move { db.add_note(str_of(&args, "text")?, &ctx.idempotency_key()).await }
            })
            .description("Adds a note. Runs without approval; rollback removes it.")
            .input_schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "minLength": 1}},
                "required": ["text"],
                "additionalProperties": false
            }))
            .output_schema(note_schema)
            .requires_approval(false)
            .revert(move |_args: Value, result: Value, _ctx: CallContext| {
                let db = d7.clone();
                async move { db.delete_note(id_of(&result, "id")?).await }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_is_idempotent_per_key_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let db = TaskDb::open(Arc::new(SqliteStore::open(&path).unwrap())).unwrap();
        let a = db.create("one", "x:1").unwrap();
        let b = db.create("one", "x:1").unwrap();
        assert_eq!(a, b);
        db.add_note("hi", "x:2").unwrap();
        drop(db);
        let db = TaskDb::open(Arc::new(SqliteStore::open(&path).unwrap())).unwrap();
        let list = db.list().unwrap();
        assert_eq!(list["tasks"].as_array().unwrap().len(), 1);
        assert_eq!(list["notes"].as_array().unwrap().len(), 1);
        assert!(db.set_done(99, true).is_err());
    }
}
