//! The decisions people make about executions: approve (with edited arguments or a standing
//! scope), reject and cancel, each recorded with who made it and when.

use super::watch::cancel_pass;
use super::Runtime;
use crate::connector::ExecutionEndStatus;
use crate::error::RuntimeError;
use crate::model::{
    now_ms, Actor, ApprovalScope, Decision, DecisionKind, Execution, LogEntry, Outcome,
};
use crate::status::{EntryState, ExecutionStatus};
use crate::store::{Claim, Commit, Transition};
use crate::value::{serialized_len, MAX_DURABLE_VALUE_CHARS};
use serde_json::Value;
use std::time::Duration;
use tracing::Instrument;

/// How long a cancel waits for the pass running the execution on this node to stop at a
/// host call and record what it did, before it marks the execution cancelled in the store.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How to approve a paused execution: who approves, and optionally edited arguments, a
/// standing scope, and which pending actions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Approval {
    /// Who approves (`local` by default).
    pub by: Actor,
    /// Arguments that replace the model's for the real run of the one approved action; they
    /// are validated against the tool's input schema first. The log keeps both.
    pub args: Option<Value>,
    /// `execution` also approves later calls of the approved actions' methods in this run.
    pub scope: ApprovalScope,
    /// Further `connector.method`s a standing approval (scope `execution`) covers; each must
    /// be a method that needs approval.
    pub methods: Vec<String>,
    /// The pending actions approved (all of them when `None`); the others are rejected:
    /// each throws an error where the code called it, and the run goes on.
    pub seqs: Option<Vec<u64>>,
}

impl Approval {
    /// An approval of every pending action by `by`.
    pub fn by(by: impl Into<Actor>) -> Self {
        Approval {
            by: by.into(),
            ..Approval::default()
        }
    }

    /// Runs the approved action with these arguments instead of the model's.
    pub fn args(mut self, args: Value) -> Self {
        self.args = Some(args);
        self
    }

    /// Sets how far the approval reaches.
    pub fn scope(mut self, scope: ApprovalScope) -> Self {
        self.scope = scope;
        self
    }

    /// Approves only these pending actions and rejects the others.
    pub fn seqs(mut self, seqs: Vec<u64>) -> Self {
        self.seqs = Some(seqs);
        self
    }
}

impl Runtime {
    /// Approves the pending actions of a paused execution as `approval` says, records who
    /// and when, and continues it by replay. Bad options are refused with nothing changed.
    pub async fn approve_with(
        &self,
        execution_id: &str,
        approval: Approval,
    ) -> Result<Outcome, RuntimeError> {
        let now = now_ms();
        let execution = self
            .hold_for(execution_id, ExecutionStatus::Paused, "approve", "paused")
            .await?;
        let span = self.decision_span(&execution, "approve");
        span.record("codemode.by", approval.by.as_str());
        if let Some(seqs) = &approval.seqs {
            span.record("codemode.seqs", tracing::field::debug(seqs));
        }
        let execution = self
            .approve_held(execution, approval, now)
            .instrument(span.clone())
            .await?;
        let pass = self.pass_span(&execution, Some(&span));
        drop(span);
        super::pass::run(self, execution, pass).await
    }

    /// Records the approval of a held `execution` and returns it as the next pass starts it.
    async fn approve_held(
        &self,
        execution: Execution,
        approval: Approval,
        now: i64,
    ) -> Result<Execution, RuntimeError> {
        let inner = &self.inner;
        let execution_id = execution.id.clone();
        let execution_id = execution_id.as_str();
        let missing = inner.registry.missing(&execution.connectors);
        if !missing.is_empty() {
            self.release(execution_id).await;
            return Err(RuntimeError::MissingConnectors {
                id: execution.id,
                missing,
            });
        }
        let (entries, decision) = match self.approved_entries(&execution, approval, now) {
            Ok(done) => done,
            Err(e) => {
                self.release(execution_id).await;
                return Err(e);
            }
        };
        let t = Transition::new(ExecutionStatus::Paused, ExecutionStatus::Running, now)
            .with_decision(decision.clone());
        let commit = Commit {
            execution_id: execution_id.to_string(),
            owner: Some(inner.node.clone()),
            entries: entries.clone(),
            transition: Some(t),
            clock: None,
        };
        if !self.commit_traced(&commit, None).await? {
            return Err(RuntimeError::AlreadyHandled {
                id: execution.id,
                what: "taken from this approval (its hold expired)",
            });
        }
        crate::status::note_execution(ExecutionStatus::Paused, ExecutionStatus::Running);
        self.publish_status(execution_id, ExecutionStatus::Running);
        let mut execution = execution;
        execution.status = ExecutionStatus::Running;
        execution.updated_at = now;
        execution.decisions.push(decision);
        for entry in entries {
            if let Some(slot) = execution.log.iter_mut().find(|e| e.seq == entry.seq) {
                *slot = entry;
            }
        }
        Ok(execution)
    }

    /// Checks `approval` against the held `execution` and builds the approved entries and
    /// the decision; nothing is written.
    fn approved_entries(
        &self,
        execution: &Execution,
        approval: Approval,
        now: i64,
    ) -> Result<(Vec<LogEntry>, Decision), RuntimeError> {
        let id = &execution.id;
        let refuse = |message: String| RuntimeError::InvalidDecision {
            id: id.clone(),
            message,
        };
        let pending: Vec<&LogEntry> = execution
            .log
            .iter()
            .filter(|e| e.state == EntryState::Pending)
            .collect();
        let all: Vec<u64> = pending.iter().map(|e| e.seq).collect();
        let seqs: Vec<u64> = match &approval.seqs {
            None => all.clone(),
            Some(named) => {
                if let Some(&seq) = named.iter().find(|s| !all.contains(s)) {
                    return Err(RuntimeError::NotPending {
                        id: id.clone(),
                        seq,
                        pending: all,
                    });
                }
                if named.is_empty() {
                    return Err(refuse(format!(
                        "seqs names no action; name at least one of {all:?}, or reject the execution to refuse them all"
                    )));
                }
                all.iter().copied().filter(|s| named.contains(s)).collect()
            }
        };
        // The pending actions not named are rejected: the pass throws an error to the code
        // where each was called, and records it (see `pass::rejected`).
        let (mut approved, mut refused): (Vec<LogEntry>, Vec<LogEntry>) = pending
            .into_iter()
            .cloned()
            .partition(|e| seqs.contains(&e.seq));
        if let Some(args) = approval.args {
            let [entry] = approved.as_mut_slice() else {
                return Err(refuse(format!(
                    "edited arguments apply to one action, and {} are approved; name the one to edit in seqs",
                    approved.len()
                )));
            };
            let Some((_, tool)) = self.inner.registry.tool(&entry.connector, &entry.method) else {
                return Err(refuse(format!(
                    "{}.{} is not configured, so its arguments cannot be checked",
                    entry.connector, entry.method
                )));
            };
            tool.validate(&entry.connector, &args)
                .map_err(|m| refuse(format!("the edited arguments of seq {}: {m}", entry.seq)))?;
            let size = serialized_len(&args);
            if size > MAX_DURABLE_VALUE_CHARS {
                return Err(refuse(format!(
                    "the edited arguments are {size} characters serialised; at most {MAX_DURABLE_VALUE_CHARS} can be kept"
                )));
            }
            entry.approved_args = Some(args);
        }
        let mut methods = Vec::new();
        match approval.scope {
            ApprovalScope::Action if !approval.methods.is_empty() => {
                return Err(refuse(
                    "methods can be named only with the scope execution (a standing approval)"
                        .into(),
                ))
            }
            ApprovalScope::Action => {}
            ApprovalScope::Execution => {
                let named = approved
                    .iter()
                    .map(|e| format!("{}.{}", e.connector, e.method))
                    .chain(approval.methods);
                for path in named {
                    self.check_standing(&path).map_err(refuse)?;
                    if !methods.contains(&path) {
                        methods.push(path);
                    }
                }
            }
        }
        let rejection = Decision::new(DecisionKind::Reject, approval.by.clone(), now, Vec::new());
        let mut decision = Decision::new(DecisionKind::Approve, approval.by, now, seqs);
        decision.scope = Some(approval.scope);
        decision.methods = methods;
        for entry in &mut approved {
            entry.decisions.push(decision.for_entry());
        }
        for entry in &mut refused {
            entry.decisions.push(rejection.clone());
        }
        approved.append(&mut refused);
        Ok((approved, decision))
    }

    /// Refuses a standing approval of `path` unless it names a method that needs approval.
    fn check_standing(&self, path: &str) -> Result<(), String> {
        let tool = path
            .split_once('.')
            .and_then(|(c, m)| self.inner.registry.tool(c, m));
        match tool {
            None => Err(format!(
                "{path:?} is not a configured connector.method; a standing approval names methods as connector.method"
            )),
            Some((_, tool)) if !tool.spec.requires_approval => Err(format!(
                "{path} does not need approval, so a standing approval of it means nothing; approve with the scope action"
            )),
            Some(_) => Ok(()),
        }
    }

    /// Rejects the pending actions of a paused execution (the action `seq` must be one of
    /// them) as `by`: the execution ends `rejected`. Returns false if `seq` is no longer
    /// pending; refused while another decision holds it.
    pub async fn reject_with(
        &self,
        execution_id: &str,
        seq: u64,
        by: Actor,
    ) -> Result<bool, RuntimeError> {
        let inner = &self.inner;
        let now = now_ms();
        let held = inner
            .store
            .hold(
                &inner.name,
                execution_id,
                ExecutionStatus::Paused,
                &self.lease(now),
                now,
            )
            .await?;
        let execution = match held {
            Claim::Won(execution) => execution,
            Claim::Unknown => return Err(RuntimeError::UnknownExecution(execution_id.into())),
            Claim::Refused(execution) if is_pending(&execution, seq) => {
                return Err(RuntimeError::AlreadyHandled {
                    id: execution.id,
                    what:
                        "claimed by another decision in progress (try again when it has finished)",
                })
            }
            Claim::Refused(_) => return Ok(false),
        };
        let span = self.decision_span(&execution, "reject");
        span.record("codemode.by", by.as_str());
        span.record("codemode.seqs", tracing::field::debug([seq]));
        if !is_pending(&execution, seq) {
            self.release(execution_id).await;
            return Ok(false);
        }
        let mut entries: Vec<LogEntry> = execution
            .log
            .into_iter()
            .filter(|e| e.state == EntryState::Pending)
            .collect();
        let seqs = entries.iter().map(|e| e.seq).collect();
        let decision = Decision::new(DecisionKind::Reject, by, now, seqs);
        for entry in &mut entries {
            entry.decisions.push(decision.for_entry());
        }
        let t = Transition::new(ExecutionStatus::Paused, ExecutionStatus::Rejected, now)
            .with_decision(decision);
        let commit = Commit {
            execution_id: execution_id.to_string(),
            owner: Some(inner.node.clone()),
            entries,
            transition: Some(t),
            clock: None,
        };
        if !self.commit_traced(&commit, Some(&span)).await? {
            return Err(RuntimeError::AlreadyHandled {
                id: execution_id.to_string(),
                what: "taken from this rejection (its hold expired)",
            });
        }
        crate::status::note_execution(ExecutionStatus::Paused, ExecutionStatus::Rejected);
        self.publish_status(execution_id, ExecutionStatus::Rejected);
        self.dispose(execution_id, ExecutionEndStatus::Rejected)
            .await;
        Ok(true)
    }

    /// Cancels a running execution as `by`: its pass stops at the next call it makes (a
    /// pass on this node is asked first, and records what it did), and the execution ends
    /// `cancelled`. What it applied stays, and a rollback can revert it. Cancelling an
    /// execution that is not running is refused.
    pub async fn cancel(&self, execution_id: &str, by: Actor) -> Result<Execution, RuntimeError> {
        let inner = &self.inner;
        let current = self.load(execution_id).await?;
        if current.status != ExecutionStatus::Running {
            return Err(refuse_cancel(current));
        }
        let decision = Decision::new(DecisionKind::Cancel, by, now_ms(), Vec::new());
        if let Some(signal) = inner.passes.get(execution_id) {
            if cancel_pass(&signal, decision.clone(), CANCEL_GRACE).await {
                let after = self.load(execution_id).await?;
                return match after.status {
                    ExecutionStatus::Cancelled => Ok(after),
                    _ => Err(refuse_cancel(after)),
                };
            }
        }
        // No pass here (another node runs it, or none does), or it did not stop in time:
        // the store takes the execution from whichever pass holds it.
        let t = Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Cancelled,
            decision.at,
        )
        .with_decision(decision);
        let commit = Commit {
            execution_id: execution_id.to_string(),
            owner: None,
            entries: Vec::new(),
            transition: Some(t),
            clock: None,
        };
        if !self.commit_traced(&commit, None).await? {
            return Err(refuse_cancel(self.load(execution_id).await?));
        }
        crate::status::note_execution(ExecutionStatus::Running, ExecutionStatus::Cancelled);
        self.publish_status(execution_id, ExecutionStatus::Cancelled);
        self.dispose(execution_id, ExecutionEndStatus::Cancelled)
            .await;
        self.load(execution_id).await
    }

    /// Takes a decision's hold on an execution in `from`, reading it; refusals name why.
    async fn hold_for(
        &self,
        execution_id: &str,
        from: ExecutionStatus,
        operation: &'static str,
        expected: &'static str,
    ) -> Result<Execution, RuntimeError> {
        let inner = &self.inner;
        let now = now_ms();
        match inner
            .store
            .hold(&inner.name, execution_id, from, &self.lease(now), now)
            .await?
        {
            Claim::Won(execution) => Ok(execution),
            Claim::Unknown => Err(RuntimeError::UnknownExecution(execution_id.into())),
            Claim::Refused(execution) if execution.status != from => {
                Err(RuntimeError::WrongStatus {
                    id: execution.id,
                    status: execution.status,
                    operation,
                    expected,
                })
            }
            Claim::Refused(execution) => Err(RuntimeError::AlreadyHandled {
                id: execution.id,
                what: "claimed (approved, rejected or rolled back)",
            }),
        }
    }
}

/// Whether the action `seq` of a paused `execution` is pending.
pub(super) fn is_pending(execution: &Execution, seq: u64) -> bool {
    execution.status == ExecutionStatus::Paused
        && execution
            .log
            .iter()
            .any(|e| e.seq == seq && e.state == EntryState::Pending)
}

/// The refusal of a cancel of an execution that is not running.
fn refuse_cancel(execution: Execution) -> RuntimeError {
    RuntimeError::WrongStatus {
        id: execution.id,
        status: execution.status,
        operation: "cancel",
        expected:
            "running (a paused execution is rejected instead; a finished one can be rolled back)",
    }
}
