//! A runtime on PostgreSQL: two nodes share one database, and an approval on either resumes
//! the run exactly once.
//!
//! The database URL comes from `CODEMODE_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`). With no server there, the example says it
//! skipped and exits successfully, unless the environment variable `CI` is set: then it fails.
//!
//! Run it with `cargo run -p codemode-examples --example postgres`.

use codemode::{Outcome, Runtime, RustConnector, RustTool};
use codemode_postgres::PostgresStore;
use codemode_quickjs::QuickJsExecutor;
use serde_json::{json, Value};
use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The server used when `CODEMODE_POSTGRES_URL` is not set.
const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A `mailer` connector whose `send` needs approval; `sent` counts real sends.
fn mailer(sent: Arc<AtomicUsize>) -> RustConnector {
    RustConnector::new("mailer").tool(
        RustTool::new("send", move |args: Value, _ctx| {
            let sent = sent.clone();
            async move {
                sent.fetch_add(1, Ordering::SeqCst);
                Ok(json!({ "to": args["to"], "queued": true }))
            }
        })
        .description("Sends an email.")
        .input_schema(json!({
            "type": "object",
            "properties": { "to": { "type": "string" }, "body": { "type": "string" } },
            "required": ["to", "body"]
        })),
    )
}

/// Connects to `url`; with no server there, says it skipped (or fails when `CI` is set).
async fn connect_or_skip(url: &str) -> Result<Option<PostgresStore>, Box<dyn Error>> {
    match PostgresStore::connect(url).await {
        Ok(store) => Ok(Some(store)),
        Err(e) if codemode_testkit::required() => {
            Err(format!("CI is set and PostgreSQL is not usable: {e}").into())
        }
        Err(e) => {
            println!(
                "skipped: no PostgreSQL at {} ({e}). Start one, or set CODEMODE_POSTGRES_URL.",
                codemode_postgres::redact(url)
            );
            Ok(None)
        }
    }
}

/// What the two nodes did.
struct Story {
    paused: Outcome,
    approved: Outcome,
    second_approval: String,
    sends: usize,
}

/// Node A starts a run that pauses; node B approves it; a second approval is refused.
async fn run(store: PostgresStore) -> Result<Story, Box<dyn Error>> {
    let sent = Arc::new(AtomicUsize::new(0));
    let executor = Arc::new(QuickJsExecutor::default());
    let node = |store: PostgresStore| {
        Runtime::builder(Arc::new(store), executor.clone())
            .name("examples-postgres")
            .connector(mailer(sent.clone()))
            .build()
    };
    let node_a = node(store.clone())?;
    let node_b = node(store)?;

    let paused = node_a
        .call(r#"async () => mailer.send({ to: "ops@example.com", body: "Deploy done" })"#)
        .await?;
    let approved = node_b.approve(paused.execution_id()).await?;
    let second_approval = match node_a.approve(paused.execution_id()).await {
        Ok(outcome) => format!("unexpectedly resumed again: {outcome:?}"),
        Err(e) => e.to_string(),
    };
    // The example leaves nothing behind in a shared database.
    node_a.delete_execution(paused.execution_id()).await?;
    Ok(Story {
        paused,
        approved,
        second_approval,
        sends: sent.load(Ordering::SeqCst),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::var("CODEMODE_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.into());
    let Some(store) = connect_or_skip(&url).await? else {
        return Ok(());
    };
    let story = run(store).await?;
    println!("node A, call: {:#}", json!(story.paused));
    println!("node B, approve: {:#}", json!(story.approved));
    println!("node A, approve again: {}", story.second_approval);
    println!("emails sent: {}", story.sends);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_postgres::ScratchDatabase;

    #[tokio::test]
    async fn an_approval_on_another_node_resumes_once() {
        // A throwaway database; `None` (after a SKIPPED line) only when no server and no CI.
        let Some(db) = ScratchDatabase::for_tests("postgres example")
            .await
            .unwrap()
        else {
            return;
        };
        let store = connect_or_skip(db.url()).await.unwrap().unwrap();
        let story = run(store).await.unwrap();
        assert!(
            matches!(story.paused, Outcome::Paused { .. }),
            "{:?}",
            story.paused
        );
        let Outcome::Completed { result, .. } = &story.approved else {
            panic!("approval did not complete: {:?}", story.approved);
        };
        assert_eq!(result["queued"], true);
        assert!(
            story.second_approval.contains("completed"),
            "{}",
            story.second_approval
        );
        assert_eq!(story.sends, 1);
    }

    #[tokio::test]
    async fn no_server_is_a_skip_without_ci_and_an_error_with_it() {
        // Nothing listens on port 1; the answer depends only on whether CI is set.
        let result = connect_or_skip("postgres://postgres@127.0.0.1:1/postgres").await;
        if codemode_testkit::required() {
            assert!(result.is_err());
        } else {
            assert!(matches!(result, Ok(None)));
        }
    }
}
