//! What people do with executions: reject, roll back, expire, delete, prune, snippets.

use super::Runtime;
use crate::connector::{CallContext, ExecutionEndStatus};
use crate::error::RuntimeError;
use crate::model::{
    now_ms, Actor, Decision, DecisionKind, Execution, ExecutionSummary, PendingAction,
    RevertFailure, RollbackReport, Snippet,
};
use crate::status::{EntryState, ExecutionStatus};
use crate::store::{Claim, Commit, Deletion, Transition};
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

    /// At most `limit` pending actions, newest execution first, after `after` (the execution
    /// id and seq of the last action of the page before); see [`crate::Store::pending_page`].
    pub async fn pending_page(
        &self,
        after: Option<(&str, u64)>,
        limit: usize,
    ) -> Result<Vec<PendingAction>, RuntimeError> {
        Ok(self
            .inner
            .store
            .pending_page(&self.inner.name, after, limit)
            .await?)
    }

    /// Rejects the pending actions (`seq` must be one of them) as `local`; the execution
    /// ends `rejected`. Undoes nothing. Returns false if that action is no longer pending;
    /// refused while a rollback holds it.
    pub async fn reject(&self, execution_id: &str, seq: u64) -> Result<bool, RuntimeError> {
        self.reject_with(execution_id, seq, Actor::local()).await
    }

    /// Rolls back as `local`; see [`Runtime::rollback_with`].
    pub async fn rollback(&self, execution_id: &str) -> Result<RollbackReport, RuntimeError> {
        self.rollback_with(execution_id, Actor::local()).await
    }

    /// Reverts applied calls newest first, where a revert exists; failures are reported
    /// after the others were tried. The status becomes `rolled_back` if anything was reverted.
    /// The rollback holds the execution while it runs: another rollback, an approval, a
    /// rejection, an expiry or a delete of it is refused meanwhile. Each reverted entry, and
    /// the execution when its status changes, records that `by` rolled it back, and when.
    pub async fn rollback_with(
        &self,
        execution_id: &str,
        by: Actor,
    ) -> Result<RollbackReport, RuntimeError> {
        let inner = &self.inner;
        let current = self.load(execution_id).await?;
        if current.status == ExecutionStatus::Running {
            return Err(refuse_running_rollback(current));
        }
        let now = now_ms();
        let execution = match inner
            .store
            .hold(
                &inner.name,
                execution_id,
                current.status,
                &self.lease(now),
                now,
            )
            .await?
        {
            Claim::Won(execution) => execution,
            Claim::Unknown => return Err(RuntimeError::UnknownExecution(execution_id.into())),
            Claim::Refused(execution) if execution.status == ExecutionStatus::Running => {
                return Err(refuse_running_rollback(execution))
            }
            Claim::Refused(execution) => return Err(RuntimeError::AlreadyHandled {
                id: execution.id,
                what:
                    "claimed by another decision (an approval, rejection or rollback in progress)",
            }),
        };
        let decision = Decision::new(DecisionKind::Rollback, by, now, Vec::new());
        let report = match self.revert_entries(&execution, &decision).await {
            Ok(report) => report,
            Err(e) => {
                self.release(execution_id).await;
                return Err(e);
            }
        };
        self.end_rollback(&execution, report, decision).await
    }

    /// Executions a rollback reverted entries of but did not finish (its node stopped after
    /// a revert, before recording the decision): not `rolled_back`, with a reverted entry.
    /// [`Runtime::finish_rollback`] finishes each; the server does so at start.
    pub async fn interrupted_rollbacks(&self) -> Result<Vec<String>, RuntimeError> {
        let mut ids = Vec::new();
        for status in [
            ExecutionStatus::Paused,
            ExecutionStatus::Completed,
            ExecutionStatus::Error,
            ExecutionStatus::Rejected,
            ExecutionStatus::Cancelled,
        ] {
            let found = self.executions_with_status(status, None).await?;
            ids.extend(
                found
                    .into_iter()
                    .filter(|e| e.log.iter().any(|l| l.state == EntryState::Reverted))
                    .map(|e| e.id),
            );
        }
        Ok(ids)
    }

    /// Finishes an interrupted rollback (see [`Runtime::interrupted_rollbacks`]) as the
    /// person who started it (the last rollback recorded on its reverted entries): what it
    /// had left is reverted and its decision recorded, once. Refused while its lease holds.
    pub async fn finish_rollback(
        &self,
        execution_id: &str,
    ) -> Result<RollbackReport, RuntimeError> {
        let current = self.load(execution_id).await?;
        let by = current
            .log
            .iter()
            .filter(|e| e.state == EntryState::Reverted)
            .flat_map(|e| e.decisions.iter())
            .filter(|d| d.kind == DecisionKind::Rollback)
            .max_by_key(|d| d.at)
            .map_or_else(Actor::local, |d| d.by.clone());
        self.rollback_with(execution_id, by).await
    }

    /// Reverts what `execution` (held by this node) applied, committing each revert alone.
    async fn revert_entries(
        &self,
        execution: &Execution,
        decision: &Decision,
    ) -> Result<RollbackReport, RuntimeError> {
        let inner = &self.inner;
        let mut report = RollbackReport {
            execution_id: execution.id.clone(),
            reverted: Vec::new(),
            skipped: Vec::new(),
            failed: Vec::new(),
            unknown: Vec::new(),
            status: execution.status,
        };
        for entry in execution.log.iter().rev() {
            // An `executing` entry was left by an interrupted pass: it may have been applied.
            let unknown = entry.state == EntryState::Executing;
            if !(entry.state == EntryState::Applied || unknown)
                || entry.connector == crate::SDK_NAMESPACE
            {
                continue;
            }
            let left = if unknown {
                &mut report.unknown
            } else {
                &mut report.skipped
            };
            let Some((registered, tool)) = inner.registry.tool(&entry.connector, &entry.method)
            else {
                left.push(entry.seq);
                continue;
            };
            if !tool.spec.has_revert {
                // A read changed nothing, so there is nothing to undo or to report.
                if !tool.spec.read_only {
                    left.push(entry.seq);
                }
                continue;
            }
            let ctx = CallContext {
                execution_id: execution.id.clone(),
                seq: entry.seq,
            };
            let result = entry.result.clone().unwrap_or(Value::Null);
            match registered
                .connector
                .revert(&entry.method, entry.effective_args().clone(), result, ctx)
                .await
            {
                Ok(()) => {
                    let mut reverted = entry.clone();
                    reverted.state = EntryState::Reverted;
                    reverted.decisions.push(Decision {
                        at: now_ms(),
                        ..decision.for_entry()
                    });
                    let written = self
                        .commit_traced(
                            &Commit {
                                execution_id: execution.id.clone(),
                                owner: Some(inner.node.clone()),
                                entries: vec![reverted],
                                transition: None,
                                clock: None,
                            },
                            None,
                        )
                        .await?;
                    if !written {
                        return Err(RuntimeError::AlreadyHandled {
                            id: execution.id.clone(),
                            what: "taken from this rollback (its hold expired) after it reverted seq",
                        });
                    }
                    crate::status::note_entry(Some(entry.state), EntryState::Reverted);
                    report.reverted.push(entry.seq);
                }
                Err(e) => report.failed.push(RevertFailure {
                    seq: entry.seq,
                    path: format!("{}.{}", entry.connector, entry.method),
                    error: if unknown {
                        format!("outcome unknown (its pass was interrupted while it ran); the revert failed: {}", e.0)
                    } else {
                        e.0
                    },
                }),
            }
        }
        Ok(report)
    }

    /// Ends a rollback: `rolled_back` if anything was reverted, by it or by an earlier
    /// rollback that was cut before it could say so (its decision then lists every reverted
    /// seq); else the hold is released.
    async fn end_rollback(
        &self,
        execution: &Execution,
        mut report: RollbackReport,
        mut decision: Decision,
    ) -> Result<RollbackReport, RuntimeError> {
        let id = execution.id.as_str();
        let mut reverted: Vec<u64> = execution
            .log
            .iter()
            .filter(|e| e.state == EntryState::Reverted)
            .map(|e| e.seq)
            .chain(report.reverted.iter().copied())
            .collect();
        reverted.sort_unstable();
        reverted.dedup();
        if reverted.is_empty() || !execution.status.can_become(ExecutionStatus::RolledBack) {
            self.release(id).await;
            return Ok(report);
        }
        decision.seqs = reverted;
        let t = Transition::new(execution.status, ExecutionStatus::RolledBack, now_ms())
            .with_decision(decision);
        let won = self
            .commit_traced(
                &Commit {
                    execution_id: id.to_string(),
                    owner: Some(self.inner.node.clone()),
                    entries: Vec::new(),
                    transition: Some(t),
                    clock: None,
                },
                None,
            )
            .await?;
        if won {
            crate::status::note_execution(execution.status, ExecutionStatus::RolledBack);
            report.status = ExecutionStatus::RolledBack;
            self.publish_status(id, ExecutionStatus::RolledBack);
            self.dispose(id, ExecutionEndStatus::RolledBack).await;
        }
        Ok(report)
    }

    /// Drops this node's hold on `id`; a failure is logged (the hold expires with its lease).
    pub(super) async fn release(&self, id: &str) {
        let inner = &self.inner;
        if let Err(e) = inner.store.release(&inner.name, id, &inner.node).await {
            tracing::warn!(execution = %id, error = %e, "releasing a rollback's hold failed");
        }
    }

    /// Ends executions not updated for at least `max_age`: paused ones become `rejected`,
    /// running ones (lease expired) `error`. Returns their ids. A `max_age` beyond the
    /// clock's range expires nothing.
    pub async fn expire_paused(&self, max_age: Duration) -> Result<Vec<String>, RuntimeError> {
        let inner = &self.inner;
        let now = now_ms();
        let age_ms = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        // Stale means an age of at least `max_age`: updated at or before `now - max_age`.
        let before = now.saturating_sub(age_ms).saturating_add(1);
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
                    format!("expired: no approval within {age_ms} ms"),
                ),
                ExecutionStatus::Running => (
                    ExecutionStatus::Error,
                    ExecutionEndStatus::Error,
                    self.interrupted_error(&id, age_ms).await?,
                ),
                _ => continue,
            };
            if self.transition(&id, status, to, Some(error)).await? {
                self.publish_status(&id, to);
                self.dispose(&id, end).await;
                expired.push(id);
            }
        }
        Ok(expired)
    }

    /// The error recorded when an interrupted run expires: it names the calls whose outcome
    /// is unknown, which a rollback still reverts.
    async fn interrupted_error(&self, id: &str, age_ms: i64) -> Result<String, RuntimeError> {
        let unknown: Vec<String> = self
            .load(id)
            .await?
            .log
            .iter()
            .filter(|e| e.state == EntryState::Executing && e.connector != crate::SDK_NAMESPACE)
            .map(|e| format!("seq {} ({}.{})", e.seq, e.connector, e.method))
            .collect();
        let mut error = format!(
            "expired: the pass did not finish within {age_ms} ms (its node stopped) and was not resumed"
        );
        if !unknown.is_empty() {
            error.push_str(&format!(
                "; the outcome of {} is unknown (they may have been applied): roll the execution back to revert them",
                unknown.join(", ")
            ));
        }
        Ok(error)
    }

    /// Executions newest first (the audit trail), at most `limit`.
    pub async fn executions(&self, limit: Option<usize>) -> Result<Vec<Execution>, RuntimeError> {
        Ok(self
            .inner
            .store
            .executions(&self.inner.name, limit, None)
            .await?)
    }

    /// A page of executions newest first as summaries (no logs), optionally of one status,
    /// after the execution `before`; see [`Store::execution_summaries`](crate::Store::execution_summaries).
    pub async fn execution_summaries(
        &self,
        status: Option<ExecutionStatus>,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ExecutionSummary>, RuntimeError> {
        Ok(self
            .inner
            .store
            .execution_summaries(&self.inner.name, status, before, limit)
            .await?)
    }

    /// The executions an audit export of `[since_ms, until_ms)` reads, at most `limit`; see
    /// [`Store::audit_executions`](crate::Store::audit_executions).
    pub async fn audit_executions(
        &self,
        since_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Execution>, RuntimeError> {
        Ok(self
            .inner
            .store
            .audit_executions(&self.inner.name, since_ms, until_ms, limit)
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

    /// Deletes one finished execution, its log and the undo records of its workspace writes;
    /// returns false if there was none. A running or paused one is refused (its applied
    /// writes would lose their log), as is one a rollback holds.
    pub async fn delete_execution(&self, id: &str) -> Result<bool, RuntimeError> {
        let inner = &self.inner;
        match inner
            .store
            .delete_execution(&inner.name, id, now_ms())
            .await?
        {
            Deletion::Unknown => Ok(false),
            Deletion::Deleted(_) => Ok(true),
            Deletion::Refused(status) if !status.is_terminal() => Err(RuntimeError::WrongStatus {
                id: id.to_string(),
                status,
                operation: "delete",
                expected: "completed, error, rejected or rolled_back (reject or expire it first)",
            }),
            Deletion::Refused(_) => Err(RuntimeError::AlreadyHandled {
                id: id.to_string(),
                what: "claimed by a rollback in progress (try again when it has finished)",
            }),
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
            .commit_traced(
                &Commit {
                    execution_id: id.to_string(),
                    owner: None,
                    entries: Vec::new(),
                    transition: Some(t),
                    clock: None,
                },
                None,
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

/// The refusal of a rollback of a running execution.
fn refuse_running_rollback(execution: Execution) -> RuntimeError {
    RuntimeError::WrongStatus {
        id: execution.id,
        status: execution.status,
        operation: "rollback",
        expected: "paused, completed, error, rejected or rolled_back (a run whose node stopped is resumed with resume_interrupted once its lease expires, or expired)",
    }
}
