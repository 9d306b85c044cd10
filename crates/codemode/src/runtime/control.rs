//! What people do with executions: reject, roll back, expire, delete, prune, snippets.

use super::Runtime;
use crate::connector::{CallContext, ExecutionEndStatus};
use crate::error::RuntimeError;
use crate::model::{now_ms, Execution, PendingAction, RevertFailure, RollbackReport, Snippet};
use crate::status::{EntryState, ExecutionStatus};
use crate::store::{Commit, Transition};
use serde_json::Value;
use std::time::Duration;

/// How to save a snippet.
#[derive(Debug, Clone, Default)]
pub struct SaveSnippet {
    /// The execution whose code becomes the snippet.
    pub execution_id: String,
    /// What it does (shown by search and describe).
    pub description: Option<String>,
    /// JSON Schema for its `input`.
    pub input_schema: Option<Value>,
    /// Save even if the execution did not complete.
    pub force: bool,
    /// Replace a snippet of the same name.
    pub replace: bool,
}

impl Runtime {
    /// Pending actions, newest first; of one execution when `execution_id` is given.
    pub async fn pending(
        &self,
        execution_id: Option<&str>,
    ) -> Result<Vec<PendingAction>, RuntimeError> {
        Ok(self
            .inner
            .store
            .pending(&self.inner.name, execution_id)
            .await?)
    }

    /// Rejects the pending action `seq`; the execution ends `rejected`. Undoes nothing.
    /// Returns false if that action is no longer pending.
    pub async fn reject(&self, execution_id: &str, seq: u64) -> Result<bool, RuntimeError> {
        let execution = self.load(execution_id).await?;
        let pending = execution
            .log
            .iter()
            .any(|e| e.seq == seq && e.state == EntryState::Pending);
        if execution.status != ExecutionStatus::Paused || !pending {
            return Ok(false);
        }
        let won = self
            .transition(
                execution_id,
                ExecutionStatus::Paused,
                ExecutionStatus::Rejected,
                None,
            )
            .await?;
        if won {
            self.dispose(execution_id, ExecutionEndStatus::Rejected)
                .await;
        }
        Ok(won)
    }

    /// Reverts applied calls newest first, where a revert exists; failures are reported
    /// after the others were tried. The status becomes `rolled_back` if anything was reverted.
    pub async fn rollback(&self, execution_id: &str) -> Result<RollbackReport, RuntimeError> {
        let inner = &self.inner;
        let execution = self.load(execution_id).await?;
        if execution.status == ExecutionStatus::Running {
            return Err(RuntimeError::WrongStatus {
                id: execution.id,
                status: execution.status,
                operation: "rollback",
                expected: "paused, completed, error or rejected",
            });
        }
        let mut report = RollbackReport {
            execution_id: execution_id.to_string(),
            reverted: Vec::new(),
            skipped: Vec::new(),
            failed: Vec::new(),
            status: execution.status,
        };
        for entry in execution.log.iter().rev() {
            if entry.state != EntryState::Applied || entry.connector == crate::SDK_NAMESPACE {
                continue;
            }
            let Some((registered, tool)) = inner.registry.tool(&entry.connector, &entry.method)
            else {
                report.skipped.push(entry.seq);
                continue;
            };
            if !tool.spec.has_revert {
                // A read changed nothing, so there is nothing to undo or to report.
                if !tool.spec.read_only {
                    report.skipped.push(entry.seq);
                }
                continue;
            }
            let ctx = CallContext {
                execution_id: execution_id.to_string(),
                seq: entry.seq,
            };
            let result = entry.result.clone().unwrap_or(Value::Null);
            match registered
                .connector
                .revert(&entry.method, entry.args.clone(), result, ctx)
                .await
            {
                Ok(()) => {
                    let mut reverted = entry.clone();
                    reverted.state = EntryState::Reverted;
                    inner
                        .store
                        .commit(
                            &inner.name,
                            &Commit {
                                execution_id: execution_id.to_string(),
                                owner: None,
                                entries: vec![reverted],
                                transition: None,
                            },
                        )
                        .await?;
                    crate::status::note_entry(Some(EntryState::Applied), EntryState::Reverted);
                    report.reverted.push(entry.seq);
                }
                Err(e) => report.failed.push(RevertFailure {
                    seq: entry.seq,
                    path: format!("{}.{}", entry.connector, entry.method),
                    error: e.0,
                }),
            }
        }
        if !report.reverted.is_empty() && execution.status.can_become(ExecutionStatus::RolledBack) {
            let won = self
                .transition(
                    execution_id,
                    execution.status,
                    ExecutionStatus::RolledBack,
                    None,
                )
                .await?;
            if won {
                report.status = ExecutionStatus::RolledBack;
                self.dispose(execution_id, ExecutionEndStatus::RolledBack)
                    .await;
            }
        }
        Ok(report)
    }

    /// Ends executions not updated for at least `max_age`: paused ones become `rejected`,
    /// running ones (lease expired) `error`. Returns their ids.
    pub async fn expire_paused(&self, max_age: Duration) -> Result<Vec<String>, RuntimeError> {
        let inner = &self.inner;
        let now = now_ms();
        // Stale means an age of at least `max_age`: updated at or before `now - max_age`.
        let before = now - max_age.as_millis() as i64 + 1;
        let stale = inner
            .store
            .stale_executions(&inner.name, before, now)
            .await?;
        let mut expired = Vec::new();
        for (id, status) in stale {
            let (to, end, error) = match status {
                ExecutionStatus::Paused => (
                    ExecutionStatus::Rejected,
                    ExecutionEndStatus::Rejected,
                    format!("expired: no approval within {} ms", max_age.as_millis()),
                ),
                ExecutionStatus::Running => (
                    ExecutionStatus::Error,
                    ExecutionEndStatus::Error,
                    format!(
                        "expired: the pass did not finish within {} ms (its node stopped)",
                        max_age.as_millis()
                    ),
                ),
                _ => continue,
            };
            if self.transition(&id, status, to, Some(error)).await? {
                self.dispose(&id, end).await;
                expired.push(id);
            }
        }
        Ok(expired)
    }

    /// Executions newest first (the audit trail), at most `limit`.
    pub async fn executions(&self, limit: Option<usize>) -> Result<Vec<Execution>, RuntimeError> {
        Ok(self
            .inner
            .store
            .executions(&self.inner.name, limit, None)
            .await?)
    }

    /// Executions of one status, newest first.
    pub async fn executions_with_status(
        &self,
        status: ExecutionStatus,
        limit: Option<usize>,
    ) -> Result<Vec<Execution>, RuntimeError> {
        Ok(self
            .inner
            .store
            .executions(&self.inner.name, limit, Some(status))
            .await?)
    }

    /// One execution with its log.
    pub async fn execution(&self, id: &str) -> Result<Option<Execution>, RuntimeError> {
        Ok(self.inner.store.execution(&self.inner.name, id).await?)
    }

    /// Deletes one execution; a non-terminal one has its resources disposed.
    pub async fn delete_execution(&self, id: &str) -> Result<bool, RuntimeError> {
        match self
            .inner
            .store
            .delete_execution(&self.inner.name, id)
            .await?
        {
            None => Ok(false),
            Some(status) => {
                match status {
                    ExecutionStatus::Paused => self.dispose(id, ExecutionEndStatus::Rejected).await,
                    ExecutionStatus::Running => self.dispose(id, ExecutionEndStatus::Error).await,
                    _ => {}
                }
                Ok(true)
            }
        }
    }

    /// Keeps the newest `keep` terminal executions; returns how many were deleted.
    pub async fn prune_executions(&self, keep: usize) -> Result<usize, RuntimeError> {
        Ok(self
            .inner
            .store
            .prune_executions(&self.inner.name, keep)
            .await?)
    }

    /// Saves an execution's code as a snippet the model can run by name.
    pub async fn save_snippet(
        &self,
        name: &str,
        options: SaveSnippet,
    ) -> Result<Snippet, RuntimeError> {
        let inner = &self.inner;
        check_snippet_name(name)?;
        let execution = self.load(&options.execution_id).await?;
        if execution.status != ExecutionStatus::Completed && !options.force {
            return Err(RuntimeError::Snippet(format!(
                "execution {} is {}; only a completed execution can be saved (force it to save anyway)",
                execution.id, execution.status
            )));
        }
        if let Some(schema) = &options.input_schema {
            jsonschema::validator_for(schema).map_err(|e| {
                RuntimeError::Snippet(format!(
                    "the input schema of {name:?} is not valid JSON Schema: {e}"
                ))
            })?;
        }
        if !options.replace && inner.store.snippet(&inner.name, name).await?.is_some() {
            return Err(RuntimeError::Snippet(format!(
                "a snippet named {name:?} exists; delete it first or save with replace"
            )));
        }
        let snippet = Snippet {
            name: name.to_string(),
            description: options.description.unwrap_or_default(),
            code: execution.code,
            saved_at: now_ms(),
            input_schema: options.input_schema,
            connectors: execution.connectors,
        };
        inner.store.put_snippet(&inner.name, &snippet).await?;
        Ok(snippet)
    }

    /// Saved snippets, ordered by name.
    pub async fn snippets(&self) -> Result<Vec<Snippet>, RuntimeError> {
        Ok(self.inner.store.snippets(&self.inner.name).await?)
    }

    /// Deletes a snippet; returns whether it existed.
    pub async fn delete_snippet(&self, name: &str) -> Result<bool, RuntimeError> {
        Ok(self
            .inner
            .store
            .delete_snippet(&self.inner.name, name)
            .await?)
    }

    async fn transition(
        &self,
        id: &str,
        from: ExecutionStatus,
        to: ExecutionStatus,
        error: Option<String>,
    ) -> Result<bool, RuntimeError> {
        debug_assert!(from.can_become(to), "{from} -> {to}");
        let mut t = Transition::new(from, to, now_ms());
        t.error = error;
        let won = self
            .inner
            .store
            .commit(
                &self.inner.name,
                &Commit {
                    execution_id: id.to_string(),
                    owner: None,
                    entries: Vec::new(),
                    transition: Some(t),
                },
            )
            .await?;
        if won {
            crate::status::note_execution(from, to);
        }
        Ok(won)
    }
}

fn check_snippet_name(name: &str) -> Result<(), RuntimeError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(RuntimeError::Snippet(format!(
            "{name:?} is not a valid snippet name: use 1-100 letters, digits, '_', '-' or '.', starting with a letter or digit"
        )))
    }
}

/// Checks a snippet's input against its schema; the message says which field and why.
pub(super) fn validate_snippet_input(
    name: &str,
    schema: &Value,
    input: &Value,
) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("snippet {name:?} has an invalid input schema: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(input)
        .take(5)
        .map(|e| {
            let at = e.instance_path.to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "codemode.run({name:?}): invalid input: {}. See codemode.describe({name:?}) for its input type",
            problems.join("; ")
        ))
    }
}
