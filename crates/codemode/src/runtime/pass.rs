//! One pass: run the code from the start, answering each call from the log or for real.
//!
//! What must be durable when: a read is safe to run again, so its entry is buffered and
//! written with the next commit (the pass end at the latest). A write that needs no approval
//! gets its `executing` mark committed (with everything buffered before it) before the
//! connector runs; its `applied` mark rides on the next commit. A crash therefore loses only
//! reads, and leaves a write `executing`, which the next pass runs again with the same
//! idempotency key.

use super::Runtime;
use crate::connector::{CallContext, ExecutionEndStatus, PassEndStatus, ReplayPolicy};
use crate::executor::{ExecuteRequest, Host, HostCall, HostReply, PassEnd, SDK_NAMESPACE};
use crate::model::{now_ms, Execution, LogEntry, Outcome, PendingAction};
use crate::status::{note_entry, note_execution, EntryState, ExecutionStatus};
use crate::store::{Commit, Transition};
use crate::value::{canonical_eq, serialized_len, MAX_DURABLE_VALUE_CHARS};
use crate::RuntimeError;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Why the pass must stop.
#[derive(Debug, Clone)]
enum Stop {
    /// An action waits for approval at this seq.
    Pause(u64),
    /// The execution fails with this message.
    Fail(String),
}

/// The log as this pass sees it, and where the pass is in it.
struct ReplayCursor {
    /// Entries by seq: the recorded ones, then the ones this pass added.
    log: BTreeMap<u64, LogEntry>,
    /// Seqs whose entry changed since the last commit.
    dirty: Vec<u64>,
    /// The next seq to hand out.
    next: u64,
    /// Set once the pass must stop; every later call aborts.
    stop: Option<Stop>,
}

impl ReplayCursor {
    /// The changed entries for the pass's last commit, moved out of the log: no call reads
    /// the log once the sandbox has finished.
    fn take_dirty_final(&mut self) -> Vec<LogEntry> {
        self.dirty_seqs()
            .into_iter()
            .filter_map(|s| self.log.remove(&s))
            .collect()
    }

    /// The changed entries for a commit during the pass (copies: the log stays whole).
    fn take_dirty(&mut self) -> Vec<LogEntry> {
        self.dirty_seqs()
            .into_iter()
            .filter_map(|s| self.log.get(&s).cloned())
            .collect()
    }

    /// The seqs changed since the last commit, in order, each once; the set is emptied.
    fn dirty_seqs(&mut self) -> Vec<u64> {
        let mut seqs = std::mem::take(&mut self.dirty);
        seqs.sort_unstable();
        seqs.dedup();
        seqs
    }

    /// Records `entry` and marks it for the next commit.
    fn set(&mut self, entry: LogEntry) {
        self.dirty.push(entry.seq);
        self.track(entry);
    }

    /// Changes the recorded entry `seq` in place and marks it for the next commit; a
    /// transition outside the table stops the pass (the entry keeps its change, as `set` does).
    fn update(&mut self, seq: u64, change: impl FnOnce(&mut LogEntry)) {
        let Some(entry) = self.log.get_mut(&seq) else {
            return;
        };
        let from = entry.state;
        change(entry);
        let to = entry.state;
        self.dirty.push(seq);
        self.check(seq, Some(from), to);
    }

    /// Records `entry` in memory only; a transition outside the table stops the pass.
    fn track(&mut self, entry: LogEntry) {
        let from = self.log.get(&entry.seq).map(|e| e.state);
        self.check(entry.seq, from, entry.state);
        self.log.insert(entry.seq, entry);
    }

    /// Notes the entry transition; one outside the table stops the pass.
    fn check(&mut self, seq: u64, from: Option<EntryState>, to: EntryState) {
        if !note_entry(from, to) {
            self.stop(Stop::Fail(format!(
                "internal error: log entry {seq} cannot go from {from:?} to {to}; the pass was stopped to keep the log consistent"
            )));
        }
    }

    fn stop(&mut self, stop: Stop) {
        if self.stop.is_none() {
            self.stop = Some(stop);
        }
    }
}

/// The host side of one pass.
pub(super) struct PassHost {
    runtime: Runtime,
    execution_id: String,
    cursor: Mutex<ReplayCursor>,
}

/// Runs one pass of `execution` (already claimed as `running` by this node).
pub(super) async fn run(runtime: &Runtime, execution: Execution) -> Result<Outcome, RuntimeError> {
    let inner = &runtime.inner;
    let id = execution.id.clone();
    let host = Arc::new(PassHost {
        runtime: runtime.clone(),
        execution_id: id.clone(),
        cursor: Mutex::new(ReplayCursor {
            log: execution.log.into_iter().map(|e| (e.seq, e)).collect(),
            dirty: Vec::new(),
            next: 0,
            stop: None,
        }),
    });
    let request = ExecuteRequest {
        code: execution.code,
        namespaces: inner.registry.namespaces(),
    };
    let result = inner.executor.execute(request, host.clone()).await;
    let (entries, stop, paused) = {
        let mut cursor = host.cursor.lock().unwrap_or_else(|e| e.into_inner());
        let stop = cursor.stop.clone();
        // The pending action is read before the final take moves the entries out.
        let paused = match &stop {
            Some(Stop::Pause(seq)) => cursor.log.get(seq).map(|entry| PendingAction {
                execution_id: id.clone(),
                seq: *seq,
                connector: entry.connector.clone(),
                method: entry.method.clone(),
                args: entry.args.clone(),
            }),
            _ => None,
        };
        (cursor.take_dirty_final(), stop, paused)
    };
    let logs = result.logs;
    let now = now_ms();
    let (transition, outcome) = match (stop, result.end) {
        (Some(Stop::Pause(seq)), _) => {
            let Some(action) = paused else {
                return Err(RuntimeError::Store(crate::StoreError::Backend(format!(
                    "internal error: the paused entry {seq} is missing from the pass's log"
                ))));
            };
            let pending = vec![action];
            let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Paused, now);
            t.logs = Some(logs);
            (
                t,
                Outcome::Paused {
                    execution_id: id.clone(),
                    pending,
                },
            )
        }
        (Some(Stop::Fail(error)), _) | (None, PassEnd::Failed(error)) => {
            failed(&id, error, logs, now)
        }
        (None, PassEnd::Aborted) => failed(
            &id,
            "the sandbox stopped the pass without a reason".into(),
            logs,
            now,
        ),
        (None, PassEnd::Returned(value)) => {
            let size = serialized_len(&value);
            let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Completed, now);
            t.result = Some(if size > MAX_DURABLE_VALUE_CHARS {
                Value::String(format!(
                    "[result omitted from the audit record: {size} characters exceeds the {MAX_DURABLE_VALUE_CHARS}-character limit for a durable value; the model received it in full]"
                ))
            } else {
                value.clone()
            });
            t.logs = Some(logs.clone());
            let shown = match &inner.transform_result {
                Some(transform) => transform(value),
                None => value,
            };
            (
                t,
                Outcome::Completed {
                    execution_id: id.clone(),
                    result: shown,
                    logs,
                },
            )
        }
    };
    let to = transition.to;
    let won = inner
        .store
        .commit(
            &inner.name,
            &Commit {
                execution_id: id.clone(),
                owner: Some(inner.node.clone()),
                entries,
                transition: Some(transition),
            },
        )
        .await?;
    if !won {
        return Err(RuntimeError::AlreadyHandled {
            id,
            what: "expired or taken over while this pass ran",
        });
    }
    note_execution(ExecutionStatus::Running, to);
    let pass_status = match to {
        ExecutionStatus::Paused => PassEndStatus::Paused,
        ExecutionStatus::Completed => PassEndStatus::Completed,
        _ => PassEndStatus::Error,
    };
    runtime.pass_ended(&id, pass_status).await;
    match to {
        ExecutionStatus::Completed => runtime.dispose(&id, ExecutionEndStatus::Completed).await,
        ExecutionStatus::Error => runtime.dispose(&id, ExecutionEndStatus::Error).await,
        _ => {}
    }
    Ok(outcome)
}

fn failed(id: &str, error: String, logs: Vec<String>, now: i64) -> (Transition, Outcome) {
    let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, now);
    t.error = Some(error.clone());
    t.logs = Some(logs.clone());
    (
        t,
        Outcome::Error {
            execution_id: id.to_string(),
            error,
            logs,
        },
    )
}

impl Host for PassHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(async move {
            if self.lock().stop.is_some() {
                return HostReply::Abort;
            }
            if call.namespace == SDK_NAMESPACE {
                return self.sdk_call(call).await;
            }
            self.connector_call(call).await
        })
    }
}

/// What to do with one connector call, decided under the cursor lock.
enum Decision {
    Replay(Value),
    Rethrow(String),
    /// Run the connector; `durable` says the `executing` mark must be committed first.
    Execute {
        seq: u64,
        durable: bool,
    },
    Abort,
}

impl PassHost {
    fn lock(&self) -> std::sync::MutexGuard<'_, ReplayCursor> {
        self.cursor.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the pass with `stop` and tells the sandbox to abort.
    fn abort(&self, stop: Stop) -> HostReply {
        self.lock().stop(stop);
        HostReply::Abort
    }

    async fn connector_call(&self, call: HostCall) -> HostReply {
        let inner = &self.runtime.inner;
        let Some((registered, tool)) = inner.registry.tool(&call.namespace, &call.method) else {
            return HostReply::Throw(format!(
                "{}.{} is not a method; use codemode.search(...) to find one",
                call.namespace, call.method
            ));
        };
        if let Err(message) = tool.validate(&call.namespace, &call.args) {
            return HostReply::Throw(message);
        }
        let size = serialized_len(&call.args);
        if size > MAX_DURABLE_VALUE_CHARS {
            return self.abort(Stop::Fail(oversized(
                &format!("the arguments of {}.{}", call.namespace, call.method),
                size,
            )));
        }
        let spec = &tool.spec;
        let decision = {
            let mut cursor = self.lock();
            let seq = cursor.next;
            cursor.next += 1;
            match cursor.log.get(&seq) {
                Some(recorded) => {
                    if recorded.connector != call.namespace
                        || recorded.method != call.method
                        || !canonical_eq(&recorded.args, &call.args)
                    {
                        let message = divergence(seq, recorded, &call);
                        cursor.stop(Stop::Fail(message));
                        Decision::Abort
                    } else {
                        match recorded.state {
                            EntryState::Applied if recorded.ephemeral => Decision::Execute {
                                seq,
                                durable: false,
                            },
                            EntryState::Applied => {
                                Decision::Replay(recorded.result.clone().unwrap_or(Value::Null))
                            }
                            EntryState::Error => Decision::Rethrow(
                                recorded
                                    .error
                                    .clone()
                                    .unwrap_or_else(|| "the call failed".into()),
                            ),
                            EntryState::Pending | EntryState::Executing => {
                                // Approved (the pass claimed the paused run) or left by a crash.
                                let mut entry = recorded.clone();
                                entry.state = EntryState::Executing;
                                cursor.set(entry);
                                Decision::Execute { seq, durable: true }
                            }
                            EntryState::Reverted => {
                                cursor.stop(Stop::Fail(format!(
                                    "seq {seq} ({}.{}) was reverted by a rollback; a rolled-back execution cannot run again",
                                    call.namespace, call.method
                                )));
                                Decision::Abort
                            }
                        }
                    }
                }
                None => {
                    let mut entry = LogEntry {
                        seq,
                        connector: call.namespace.clone(),
                        method: call.method.clone(),
                        args: call.args.clone(),
                        result: None,
                        error: None,
                        requires_approval: spec.requires_approval,
                        ephemeral: spec.replay == ReplayPolicy::Reexecute,
                        state: EntryState::Executing,
                    };
                    if spec.requires_approval {
                        entry.state = EntryState::Pending;
                        cursor.set(entry);
                        cursor.stop(Stop::Pause(seq));
                        Decision::Abort
                    } else {
                        let durable = !spec.read_only && spec.replay == ReplayPolicy::Log;
                        if durable {
                            cursor.set(entry);
                        } else {
                            // Reads are recorded when they return.
                            cursor.track(entry);
                        }
                        Decision::Execute { seq, durable }
                    }
                }
            }
        };
        let seq = match decision {
            Decision::Replay(value) => return HostReply::Value(value),
            Decision::Rethrow(message) => return HostReply::Throw(message),
            Decision::Abort => return HostReply::Abort,
            Decision::Execute { seq, durable } => {
                if durable {
                    if let Err(stop) = self.flush().await {
                        return self.abort(stop);
                    }
                }
                seq
            }
        };
        let ctx = CallContext {
            execution_id: self.execution_id.clone(),
            seq,
        };
        let outcome = registered
            .connector
            .execute(&call.method, call.args, ctx)
            .await;
        let mut cursor = self.lock();
        if cursor.stop.is_some() {
            return HostReply::Abort;
        }
        let Some(entry) = cursor.log.get(&seq) else {
            return HostReply::Abort;
        };
        match outcome {
            Ok(result) => {
                let keep = if entry.ephemeral {
                    None
                } else {
                    let size = serialized_len(&result);
                    if size > MAX_DURABLE_VALUE_CHARS {
                        let what = format!(
                            "the result of {}.{} (seq {seq})",
                            entry.connector, entry.method
                        );
                        cursor.stop(Stop::Fail(oversized(&what, size)));
                        return HostReply::Abort;
                    }
                    Some(result.clone())
                };
                cursor.update(seq, |entry| {
                    entry.state = EntryState::Applied;
                    entry.error = None;
                    if keep.is_some() {
                        entry.result = keep;
                    }
                });
                HostReply::Value(result)
            }
            Err(error) => {
                let message = error.0;
                cursor.update(seq, |entry| {
                    entry.state = EntryState::Error;
                    entry.error = Some(message.clone());
                });
                HostReply::Throw(message)
            }
        }
    }

    /// Commits every changed entry now, while this node still holds the lease.
    async fn flush(&self) -> Result<(), Stop> {
        let entries = self.lock().take_dirty();
        if entries.is_empty() {
            return Ok(());
        }
        let inner = &self.runtime.inner;
        let commit = Commit {
            execution_id: self.execution_id.clone(),
            owner: Some(inner.node.clone()),
            entries,
            transition: None,
        };
        match inner.store.commit(&inner.name, &commit).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Stop::Fail(
                "this node lost its claim on the execution (expired or taken over by another node)"
                    .into(),
            )),
            Err(e) => Err(Stop::Fail(format!("the store failed: {e}"))),
        }
    }

    async fn sdk_call(&self, call: HostCall) -> HostReply {
        match call.method.as_str() {
            "step" => self.step_begin(&call.args),
            "step_result" | "step_error" => self.step_end(&call),
            "search" | "describe" | "run" => super::sdk::answer(&self.runtime, &call).await,
            other => HostReply::Throw(format!(
                "codemode.{other} does not exist; the SDK has search, describe, step and run"
            )),
        }
    }

    fn step_begin(&self, args: &Value) -> HostReply {
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return HostReply::Throw("codemode.step(name, fn) needs a string name".into());
        };
        let call_args = json!({ "name": name });
        let mut cursor = self.lock();
        let seq = cursor.next;
        cursor.next += 1;
        if let Some(recorded) = cursor.log.get(&seq) {
            if recorded.connector != SDK_NAMESPACE
                || recorded.method != "step"
                || !canonical_eq(&recorded.args, &call_args)
            {
                let call = HostCall {
                    namespace: SDK_NAMESPACE.into(),
                    method: "step".into(),
                    args: call_args,
                };
                let message = divergence(seq, recorded, &call);
                cursor.stop(Stop::Fail(message));
                return HostReply::Abort;
            }
            match recorded.state {
                EntryState::Applied => {
                    let value = recorded.result.clone().unwrap_or(Value::Null);
                    return HostReply::Value(json!({ "replay": true, "value": value }));
                }
                EntryState::Error => {
                    return HostReply::Throw(recorded.error.clone().unwrap_or_default());
                }
                _ => {}
            }
        } else {
            cursor.track(LogEntry {
                seq,
                connector: SDK_NAMESPACE.into(),
                method: "step".into(),
                args: call_args,
                result: None,
                error: None,
                requires_approval: false,
                ephemeral: false,
                state: EntryState::Executing,
            });
        }
        HostReply::Value(json!({ "replay": false, "seq": seq }))
    }

    fn step_end(&self, call: &HostCall) -> HostReply {
        let seq = call.args.get("seq").and_then(Value::as_u64);
        let mut cursor = self.lock();
        let Some(mut entry) = seq.and_then(|s| cursor.log.get(&s)).cloned() else {
            return HostReply::Throw("codemode.step: unknown step".into());
        };
        if entry.method != "step" || entry.state != EntryState::Executing {
            return HostReply::Throw("codemode.step: this step already ended".into());
        }
        if call.method == "step_error" {
            entry.state = EntryState::Error;
            entry.error = Some(
                call.args
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("the step failed")
                    .to_string(),
            );
        } else {
            let value = call.args.get("value").cloned().unwrap_or(Value::Null);
            let size = serialized_len(&value);
            if size > MAX_DURABLE_VALUE_CHARS {
                let name = entry.args["name"].as_str().unwrap_or_default().to_string();
                cursor.stop(Stop::Fail(oversized(
                    &format!("the value of step {name:?}"),
                    size,
                )));
                return HostReply::Abort;
            }
            entry.state = EntryState::Applied;
            entry.result = Some(value);
        }
        cursor.set(entry);
        HostReply::Value(Value::Null)
    }
}

fn describe_call(connector: &str, method: &str, args: &Value) -> String {
    let mut text = serde_json::to_string(args).unwrap_or_default();
    if text.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    format!("{connector}.{method}({text})")
}

fn divergence(seq: u64, recorded: &LogEntry, call: &HostCall) -> String {
    format!(
        "replay diverged at seq {seq}: the log recorded {} but this pass called {}. On every pass the code must make the same calls, in the same order, with the same arguments; wrap Date.now(), Math.random() and other nondeterminism in codemode.step(name, fn), and do not run connector calls in Promise.all",
        describe_call(&recorded.connector, &recorded.method, &recorded.args),
        describe_call(&call.namespace, &call.method, &call.args),
    )
}

fn oversized(what: &str, size: usize) -> String {
    format!(
        "{what} is {size} characters serialised; one durable value may be at most {MAX_DURABLE_VALUE_CHARS}. Store the data elsewhere (a file, a bucket, a table) and pass a small reference such as its path or id"
    )
}
