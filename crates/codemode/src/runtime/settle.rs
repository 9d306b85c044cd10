//! What a pass still owes once its code has ended: approved writes the code no longer
//! reached, and, when a cancel took the run from it, the outcomes of writes that ran.

use super::cursor::{durable_text, Stop};
use super::flush::lock;
use super::pass::PassHost;
use super::Runtime;
use crate::connector::{CallContext, ExecutionEndStatus, PassEndStatus};
use crate::error::RuntimeError;
use crate::executor::{HostCall, PassEnd};
use crate::model::{now_ms, DecisionKind, LogEntry, Outcome};
use crate::status::{EntryState, ExecutionStatus};
use crate::store::{Claim, Commit, StoreError, Transition};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a cancelled pass tries to record its writes' outcomes while another decision (a
/// rollback) holds the run; past it, that decision has read them as of unknown outcome and
/// deals with them so.
const SETTLE_PATIENCE: Duration = Duration::from_secs(2);

/// How often a cancelled pass tries again to hold its run.
const SETTLE_RETRY: Duration = Duration::from_millis(25);

impl PassHost {
    /// Runs the approved actions of this pass that the code did not call again before it
    /// ended (it returned, or threw at a rejected sibling of the batch first): an approval is
    /// a promise that they run, exactly once, so they run now, each as the code would have.
    pub(super) async fn run_approved_leftovers(&self) {
        let leftovers: Vec<LogEntry> = {
            let cursor = lock(&self.cursor);
            if cursor.stop.is_some() {
                return;
            }
            cursor
                .log
                .values()
                .filter(|e| e.state == EntryState::Pending && approved(e))
                .cloned()
                .collect()
        };
        for mut entry in leftovers {
            let registry = &self.runtime.inner.registry;
            let Some((registered, _)) = registry.tool(&entry.connector, &entry.method) else {
                continue;
            };
            let connector = registered.connector.clone();
            let call = HostCall {
                namespace: entry.connector.clone(),
                method: entry.method.clone(),
                args: entry.effective_args().clone(),
            };
            let ctx = CallContext {
                execution_id: self.execution_id.clone(),
                seq: entry.seq,
            };
            let span = self.runtime.call_span(&self.span, &call, entry.seq, false);
            entry.state = EntryState::Executing;
            self.write(connector, call, ctx, entry, span).await;
        }
    }
}

/// How long the pass end waits for reads the code did not await; past it they are left to
/// finish unrecorded (a read is safe to run again).
const SETTLE_READS_GRACE: Duration = Duration::from_secs(5);

/// The most unawaited calls the note after a settled pass names; the others are counted.
const MAX_NAMED_UNAWAITED: usize = 5;

impl PassHost {
    /// Waits, at most [`SETTLE_READS_GRACE`], for the reads still in flight once the code
    /// settled, so that they are recorded with the pass.
    pub(super) async fn finish_reads(&self) {
        let all_done = self.reads.write();
        if tokio::time::timeout(SETTLE_READS_GRACE, all_done)
            .await
            .is_err()
        {
            tracing::warn!(
                execution_id = %self.execution_id,
                "reads the code did not await were still running {} s after it ended; they are not recorded",
                SETTLE_READS_GRACE.as_secs()
            );
        }
    }

    /// Once the code settled (`end`): pauses the pass if it returned while actions it
    /// started wait for a person (so they stay approvable), and otherwise says which calls
    /// the code made and never saw the reply of, as a console note for the model.
    pub(super) fn settle_unawaited(&self, end: &PassEnd) -> Option<String> {
        let mut cursor = lock(&self.cursor);
        if cursor.stop.is_some() || matches!(end, PassEnd::Aborted) {
            return None;
        }
        if matches!(end, PassEnd::Returned(_)) && !cursor.delivery.awaiting.is_empty() {
            let seqs = cursor.delivery.awaiting.clone();
            cursor.stop(Stop::Pause(seqs));
            return None;
        }
        unawaited_note(cursor.delivery.unseen())
    }
}

/// The note naming the calls the code did not await (`unseen`, by seq), if any.
fn unawaited_note(unseen: &BTreeMap<u64, std::sync::Arc<str>>) -> Option<String> {
    if unseen.is_empty() {
        return None;
    }
    let mut named: Vec<String> = unseen
        .iter()
        .take(MAX_NAMED_UNAWAITED)
        .map(|(seq, name)| format!("{name} at seq {seq}"))
        .collect();
    if unseen.len() > MAX_NAMED_UNAWAITED {
        named.push(format!("and {} more", unseen.len() - MAX_NAMED_UNAWAITED));
    }
    let calls = match unseen.len() {
        1 => "1 call".to_string(),
        n => format!("{n} calls"),
    };
    Some(format!(
        "[codemode] the code ended before {calls} it made had answered it: {}. The host finished each and recorded it in the execution's log (a write stays approvable and revertible), but the code never saw the result. Await every call whose result matters, e.g. `await Promise.all([...])`.",
        named.join(", ")
    ))
}

/// Whether a pending entry carries a person's approval (its last decision).
fn approved(entry: &LogEntry) -> bool {
    entry
        .decisions
        .last()
        .is_some_and(|d| d.kind == DecisionKind::Approve)
}

impl Runtime {
    /// Ends a pass whose last commit the store failed (`failure`) as an error, with its
    /// console lines and without its entries, so that no run is left `running` by a value
    /// the store could not take or a failure that passed; the writes it committed as
    /// `executing` are of unknown outcome, which a rollback reverts. When this fails too,
    /// the store's first error is returned.
    pub(super) async fn end_unrecorded(
        &self,
        id: &str,
        failure: StoreError,
        ended: Option<Transition>,
    ) -> Result<Outcome, RuntimeError> {
        let error = durable_text(format!(
            "the store could not record how this pass ended ({failure}); its calls are kept as far as they were recorded, and a rollback reverts those of unknown outcome"
        ));
        let now = now_ms();
        let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, now);
        t.error = Some(error.clone());
        t.logs = ended.and_then(|t| t.logs);
        let logs = t.logs.clone().unwrap_or_default();
        let commit = Commit {
            execution_id: id.to_string(),
            owner: Some(self.inner.node.clone()),
            entries: Vec::new(),
            transition: Some(t),
            clock: None,
        };
        if !matches!(self.commit_traced(&commit, None).await, Ok(true)) {
            return Err(RuntimeError::Store(failure));
        }
        crate::status::note_execution(ExecutionStatus::Running, ExecutionStatus::Error);
        self.publish_end(id, ExecutionStatus::Error, Some(&error));
        self.pass_ended(id, PassEndStatus::Error).await;
        self.dispose(id, ExecutionEndStatus::Error).await;
        Ok(Outcome::error(id, error, crate::ErrorCode::Internal, logs))
    }

    /// Records the outcomes of writes a cancelled pass ran (`entries`, its last commit, which
    /// the cancel refused): under a hold of the cancelled run, each entry the store still has
    /// `executing` becomes what the connector did, so that it stays revertible with its result.
    /// An entry a rollback reverted meanwhile is left as it is.
    pub(super) async fn settle_cancelled(&self, id: &str, entries: Vec<LogEntry>) {
        let done: Vec<LogEntry> = entries
            .into_iter()
            .filter(|e| matches!(e.state, EntryState::Applied | EntryState::Error))
            .collect();
        if done.is_empty() {
            return;
        }
        let inner = &self.inner;
        let give_up = std::time::Instant::now() + SETTLE_PATIENCE;
        let held = loop {
            let now = now_ms();
            let hold = inner
                .store
                .hold(
                    &inner.name,
                    id,
                    ExecutionStatus::Cancelled,
                    &self.lease(now),
                    now,
                )
                .await;
            match hold {
                Ok(Claim::Won(execution)) => break execution,
                Ok(Claim::Refused(e))
                    if e.status == ExecutionStatus::Cancelled
                        && std::time::Instant::now() < give_up =>
                {
                    tokio::time::sleep(SETTLE_RETRY).await;
                }
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(execution = %id, error = %e, "recording the writes of a cancelled pass failed");
                    return;
                }
            }
        };
        let executing: BTreeSet<u64> = held
            .log
            .iter()
            .filter(|e| e.state == EntryState::Executing)
            .map(|e| e.seq)
            .collect();
        let entries: Vec<LogEntry> = done
            .into_iter()
            .filter(|e| executing.contains(&e.seq))
            .collect();
        if !entries.is_empty() {
            let commit = Commit {
                execution_id: id.to_string(),
                owner: Some(inner.node.clone()),
                entries,
                transition: None,
                clock: None,
            };
            if let Err(e) = self.commit_traced(&commit, None).await {
                tracing::warn!(execution = %id, error = %e, "recording the writes of a cancelled pass failed");
            }
        }
        self.release(id).await;
    }
}
