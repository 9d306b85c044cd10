//! The commands a person gives about executions and snippets, over one interface: the
//! runtime itself (the store, in this process) or a running server ([`crate::client::Client`]).

use crate::audit::{AuditError, AuditRange, AuditRecord};
use async_trait::async_trait;
use codemode::{
    Actor, Approval, Execution, ExecutionSummary, Outcome, PendingAction, RollbackReport, Runtime,
    RuntimeError, SaveSnippet, Snippet,
};
use serde_json::Value;
use std::time::Duration;

/// Why a command failed, saying what and where.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The runtime refused or failed (local).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The thing named does not exist or is not in a state the command applies to.
    #[error("{0}")]
    Refused(String),
    /// The server answered with an error status.
    #[error("{message}{hint} [HTTP {status} from {base}]")]
    Server {
        /// The server's `error` message.
        message: String,
        /// What to do about it, when we know.
        hint: &'static str,
        /// The HTTP status.
        status: u16,
        /// The server's base URL.
        base: String,
    },
    /// The server could not be reached.
    #[error(
        "cannot reach the codemode server at {base} ({reason}); is `codemode serve` running there?"
    )]
    Unreachable {
        /// The server's base URL.
        base: String,
        /// The transport's error.
        reason: String,
    },
    /// The server's answer was cut off or not of the expected shape.
    #[error("{request}: {problem}")]
    Answer {
        /// `METHOD /path`.
        request: String,
        /// What was wrong with the answer.
        problem: String,
    },
    /// The client could not be set up (bad URL, missing token).
    #[error("{0}")]
    Setup(String),
}

impl From<AuditError> for ControlError {
    fn from(e: AuditError) -> Self {
        match e {
            AuditError::Runtime(e) => ControlError::Runtime(e),
            too_wide => ControlError::Refused(too_wide.to_string()),
        }
    }
}

/// A command's result.
pub type ControlResult<T> = Result<T, ControlError>;

/// Every command on executions and snippets, local or remote alike.
#[async_trait]
pub trait Control: Send + Sync {
    /// Runs code as a new execution.
    async fn run(&self, code: &str) -> ControlResult<Outcome>;
    /// Approves the pending actions of a paused execution and continues it.
    async fn approve(&self, id: &str) -> ControlResult<Outcome>;
    /// Rejects a pending action; the execution ends `rejected`.
    async fn reject(&self, id: &str, seq: u64) -> ControlResult<()>;
    /// Takes over a `running` execution whose node stopped (its lease expired) and continues it.
    async fn resume(&self, id: &str) -> ControlResult<Outcome>;
    /// Reverts the applied actions of an execution, newest first.
    async fn rollback(&self, id: &str) -> ControlResult<RollbackReport>;
    /// Every action waiting for approval.
    async fn pending(&self) -> ControlResult<Vec<PendingAction>>;
    /// The newest `limit` executions, as summaries (no logs).
    async fn executions(&self, limit: usize) -> ControlResult<Vec<ExecutionSummary>>;
    /// One execution with its log.
    async fn execution(&self, id: &str) -> ControlResult<Execution>;
    /// The saved snippets.
    async fn snippets(&self) -> ControlResult<Vec<Snippet>>;
    /// Saves the code of an execution as a snippet.
    async fn save_snippet(&self, name: &str, save: SaveSnippet) -> ControlResult<Snippet>;
    /// Deletes a snippet.
    async fn delete_snippet(&self, name: &str) -> ControlResult<()>;
    /// Ranked connector methods and snippets matching `query`, as the API answers it.
    async fn search(&self, query: &str) -> ControlResult<Value>;
    /// TypeScript declarations of a connector, method or snippet, as the API answers it.
    async fn describe(&self, target: &str) -> ControlResult<Value>;
    /// Every declaration the sandbox offers.
    async fn types(&self) -> ControlResult<String>;
    /// Ends paused and running executions at least `max_age` old; their ids.
    async fn expire(&self, max_age: Duration) -> ControlResult<Vec<String>>;
    /// Deletes terminal executions beyond the newest `keep`; how many.
    async fn prune(&self, keep: usize) -> ControlResult<u64>;
    /// The audit records within `range`, in time order.
    async fn audit(&self, range: AuditRange) -> ControlResult<Vec<AuditRecord>>;
}

fn no_pending(id: &str, seq: u64) -> ControlError {
    ControlError::Refused(format!(
        "execution {id} has no pending action {seq} (already handled, or not paused)"
    ))
}

fn to_value<T: serde::Serialize>(v: &T) -> ControlResult<Value> {
    serde_json::to_value(v).map_err(|e| ControlError::Refused(e.to_string()))
}

/// The runtime in this process, as the CLI uses it on a local store: decisions record the
/// actor `cli`.
#[async_trait]
impl Control for Runtime {
    async fn run(&self, code: &str) -> ControlResult<Outcome> {
        Ok(self.call(code).await?)
    }

    async fn approve(&self, id: &str) -> ControlResult<Outcome> {
        Ok(self.approve_with(id, Approval::by(Actor::cli())).await?)
    }

    async fn reject(&self, id: &str, seq: u64) -> ControlResult<()> {
        if Runtime::execution(self, id).await?.is_none() {
            return Err(RuntimeError::UnknownExecution(id.to_string()).into());
        }
        match self.reject_with(id, seq, Actor::cli()).await? {
            true => Ok(()),
            false => Err(no_pending(id, seq)),
        }
    }

    async fn resume(&self, id: &str) -> ControlResult<Outcome> {
        crate::decisions::resume(self, id)
            .await
            .map_err(|e| match crate::decisions::lease_refusal(self, &e) {
                Some(message) => ControlError::Refused(message),
                None => e.into(),
            })
    }

    async fn rollback(&self, id: &str) -> ControlResult<RollbackReport> {
        Ok(self.rollback_with(id, Actor::cli()).await?)
    }

    async fn pending(&self) -> ControlResult<Vec<PendingAction>> {
        Ok(Runtime::pending(self, None).await?)
    }

    async fn executions(&self, limit: usize) -> ControlResult<Vec<ExecutionSummary>> {
        Ok(Runtime::execution_summaries(self, None, None, limit).await?)
    }

    async fn execution(&self, id: &str) -> ControlResult<Execution> {
        Runtime::execution(self, id)
            .await?
            .ok_or_else(|| RuntimeError::UnknownExecution(id.to_string()).into())
    }

    async fn snippets(&self) -> ControlResult<Vec<Snippet>> {
        Ok(Runtime::snippets(self).await?)
    }

    async fn save_snippet(&self, name: &str, save: SaveSnippet) -> ControlResult<Snippet> {
        Ok(Runtime::save_snippet(self, name, save).await?)
    }

    async fn delete_snippet(&self, name: &str) -> ControlResult<()> {
        match Runtime::delete_snippet(self, name).await? {
            true => Ok(()),
            false => Err(ControlError::Refused(format!("no snippet named {name:?}"))),
        }
    }

    async fn search(&self, query: &str) -> ControlResult<Value> {
        to_value(&Runtime::search(self, query).await?)
    }

    async fn describe(&self, target: &str) -> ControlResult<Value> {
        match Runtime::describe(self, target).await? {
            Ok(d) => to_value(&d),
            Err(message) => Err(ControlError::Refused(message)),
        }
    }

    async fn types(&self) -> ControlResult<String> {
        Ok(Runtime::types(self))
    }

    async fn expire(&self, max_age: Duration) -> ControlResult<Vec<String>> {
        Ok(self.expire_paused(max_age).await?)
    }

    async fn prune(&self, keep: usize) -> ControlResult<u64> {
        Ok(self.prune_executions(keep).await? as u64)
    }

    async fn audit(&self, range: AuditRange) -> ControlResult<Vec<AuditRecord>> {
        Ok(crate::audit::collect(self, range).await?)
    }
}
