//! A Rust connector with a revert: create, pause for approval, approve, roll back.
//!
//! `calendar.create_event` changes something and has no explicit policy, so it requires a
//! person's approval: the model's call pauses the run. Approving runs the code again from the
//! start, replaying what is recorded, and creates the event. A rollback then calls the tool's
//! `revert` with the recorded arguments and result, which deletes the event again.
//!
//! Run it with `cargo run -p codemode-examples --example rust_connector_revert`.

use codemode::{Outcome, Runtime, RustConnector, RustTool, ToolError};
use codemode_quickjs::QuickJsExecutor;
use codemode_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::error::Error;
use std::sync::{Arc, Mutex};

/// Events by id: the connector's own state (a real one would be an API or a table).
type Events = Arc<Mutex<BTreeMap<String, Value>>>;

fn calendar_connector(events: Events) -> RustConnector {
    let created = events.clone();
    let removed = events.clone();
    RustConnector::new("calendar")
        .tool(
            RustTool::new("list_events", move |_args, _ctx| {
                let events = events.clone();
                async move {
                    let all: Vec<Value> = events.lock().unwrap().values().cloned().collect();
                    Ok(json!(all))
                }
            })
            .description("Lists every event.")
            .read_only(),
        )
        .tool(
            RustTool::new("create_event", move |args: Value, ctx| {
                let events = created.clone();
                async move {
                    // The idempotency key makes a re-run after a crash create nothing twice.
                    let id = ctx.idempotency_key();
                    let event = json!({ "id": id, "title": args["title"], "day": args["day"] });
                    events.lock().unwrap().insert(id.clone(), event.clone());
                    Ok(event)
                }
            })
            .description("Creates an event on a day (YYYY-MM-DD).")
            .input_schema(json!({
                "type": "object",
                "properties": { "title": { "type": "string" }, "day": { "type": "string" } },
                "required": ["title", "day"],
                "additionalProperties": false
            }))
            .revert(move |_args, result: Value, _ctx| {
                let events = removed.clone();
                async move {
                    let id = result["id"].as_str().unwrap_or_default();
                    match events.lock().unwrap().remove(id) {
                        Some(_) => Ok(()),
                        None => Err(ToolError::new(format!("event {id} no longer exists"))),
                    }
                }
            }),
        )
}

/// What each step of the example returned, and the events after it.
struct Story {
    paused: Outcome,
    after_pause: usize,
    approved: Outcome,
    after_approval: usize,
    rollback: codemode::RollbackReport,
    after_rollback: usize,
}

async fn run(store_path: &std::path::Path) -> Result<Story, Box<dyn Error>> {
    let events = Events::default();
    let store = Arc::new(SqliteStore::open(store_path)?);
    let executor = Arc::new(QuickJsExecutor::default());
    let runtime = Runtime::builder(store, executor)
        .connector(calendar_connector(events.clone()))
        .build()?;
    let count = || events.lock().unwrap().len();

    let code = r#"async () => {
        const event = await calendar.create_event({ title: "Team lunch", day: "2030-05-17" });
        return { created: event.id, total: (await calendar.list_events()).length };
    }"#;
    let paused = runtime.call(code).await?;
    let after_pause = count();
    // A person looks at `paused` (or `runtime.pending()`) and says yes.
    let approved = runtime.approve(paused.execution_id()).await?;
    let after_approval = count();
    let rollback = runtime.rollback(approved.execution_id()).await?;
    Ok(Story {
        paused,
        after_pause,
        approved,
        after_approval,
        rollback,
        after_rollback: count(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let story = run(&dir.path().join("codemode.db")).await?;
    println!("1. call: {:#}", json!(story.paused));
    println!("   events: {}", story.after_pause);
    println!("2. approve: {:#}", json!(story.approved));
    println!("   events: {}", story.after_approval);
    println!("3. rollback: {:#}", json!(story.rollback));
    println!("   events: {}", story.after_rollback);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode::ExecutionStatus;

    #[tokio::test]
    async fn create_pauses_approve_applies_and_rollback_reverts() {
        let dir = tempfile::tempdir().unwrap();
        let story = run(&dir.path().join("codemode.db")).await.unwrap();

        let Outcome::Paused { pending, .. } = &story.paused else {
            panic!("the create did not pause: {:?}", story.paused);
        };
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].method, "create_event");
        assert_eq!(pending[0].args["title"], "Team lunch");
        assert_eq!(story.after_pause, 0, "an unapproved action ran");

        let Outcome::Completed { result, .. } = &story.approved else {
            panic!("approval did not complete: {:?}", story.approved);
        };
        assert_eq!(result["total"], 1);
        assert_eq!(story.after_approval, 1);

        assert_eq!(story.rollback.reverted, vec![0]);
        assert!(story.rollback.failed.is_empty());
        assert_eq!(story.rollback.status, ExecutionStatus::RolledBack);
        assert_eq!(story.after_rollback, 0);
    }
}
