//! The built-in demo connector `tasks`, kept beside the store (a SQLite file of its own next to
//! the store's, or its own tables of the store's PostgreSQL database) so that the server, the
//! CLI and every node on one PostgreSQL see the same tasks and a restart loses nothing.
//!
//! The demo reaches its tables on connections of its own ([`TaskDb::open`] with
//! [`TaskDb::path_beside`] the store's file, [`PgTasks::open`] with the store's URL): it
//! borrows nothing from the store, and names no store crate.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod error;
mod kind;
mod postgres;
mod sqlite;

pub use kind::{DemoConfig, DemoKind, DEMO_KIND, DEMO_NAME};

use codemode::{CallContext, RustConnector, RustTool, ToolError};
use serde_json::{json, Value};

pub use error::DemoError;
pub use postgres::PgTasks;
pub use sqlite::TaskDb;

/// Where the demo keeps its tasks: a SQLite file beside the store's, or the store's PostgreSQL
/// database. Both
/// keep the same semantics: a create or a note is made once per call key.
#[derive(Clone)]
pub enum Tasks {
    /// Tables in the demo's SQLite file.
    Sqlite(TaskDb),
    /// Tables in the PostgreSQL database.
    Postgres(PgTasks),
}

impl Tasks {
    async fn list(&self) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.list().await,
            Tasks::Postgres(d) => d.list().await,
        }
    }

    async fn create(&self, title: &str, key: &str) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.create(title, key).await,
            Tasks::Postgres(d) => d.create(title, key).await,
        }
    }

    async fn set_done(&self, id: i64, done: bool) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.set_done(id, done).await,
            Tasks::Postgres(d) => d.set_done(id, done).await,
        }
    }

    async fn delete(&self, id: i64) -> Result<(), ToolError> {
        match self {
            Tasks::Sqlite(d) => d.delete(id).await,
            Tasks::Postgres(d) => d.delete(id).await,
        }
    }

    async fn add_note(&self, text: &str, key: &str) -> Result<Value, ToolError> {
        match self {
            Tasks::Sqlite(d) => d.add_note(text, key).await,
            Tasks::Postgres(d) => d.add_note(text, key).await,
        }
    }

    async fn delete_note(&self, id: i64) -> Result<(), ToolError> {
        match self {
            Tasks::Sqlite(d) => d.delete_note(id).await,
            Tasks::Postgres(d) => d.delete_note(id).await,
        }
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
