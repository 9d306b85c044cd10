//! `codemode.*` calls of a pass: `step` (recorded in the log like a call, its value replayed on
//! later passes), and `search`, `describe` and `run`, which are not in the log.

use super::cursor::{durable_text, json_size, oversized, too_deep, Stop};
use super::pass::PassHost;
use super::replay::Divergence;
use crate::executor::{HostCall, HostReply, SDK_NAMESPACE};
use crate::model::LogEntry;
use crate::status::EntryState;
use crate::tape::StepMark;
use crate::value::{canonical_eq, nested_deeper_than, MAX_DURABLE_DEPTH, MAX_DURABLE_VALUE_CHARS};
use serde_json::{json, Value};

impl PassHost {
    /// Answers an SDK call; a step's reply carries its ticket (search, describe and run
    /// are not in the log and reach the sandbox as soon as they are ready).
    pub(super) async fn sdk_call(&self, call: HostCall) -> (Option<u64>, HostReply) {
        match call.method.as_str() {
            "step" => self.step_begin(&call.args),
            "step_result" | "step_error" => self.step_end(&call),
            "search" | "describe" | "run" => (None, super::sdk::answer(&self.runtime, &call).await),
            other => (
                None,
                HostReply::Throw(format!(
                    "codemode.{other} does not exist; the SDK has search, describe, step and run"
                )),
            ),
        }
    }

    /// Begins `codemode.step(name, fn)`: replays a recorded step, or hands out its seq.
    fn step_begin(&self, args: &Value) -> (Option<u64>, HostReply) {
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return (
                None,
                HostReply::Throw("codemode.step(name, fn) needs a string name".into()),
            );
        };
        let call_args = json!({ "name": name });
        let mut cursor = self.lock();
        let Some(seq) = cursor.next_seq() else {
            return (None, HostReply::Abort);
        };
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
                let divergence = Divergence::at(seq, recorded, &call);
                cursor.stop(Stop::Diverged(divergence));
                return (None, HostReply::Abort);
            }
            match recorded.state {
                EntryState::Applied => {
                    let value = cursor.log.remove(&seq).and_then(|e| e.result);
                    let value = value.unwrap_or(Value::Null);
                    let mut reply = json!({ "replay": true, "value": value });
                    if let Some(mark) = cursor.clock().mark(seq) {
                        reply["clock"] = json!([mark.1, mark.2]);
                    }
                    return (Some(cursor.delivery.ticket(seq)), HostReply::Value(reply));
                }
                EntryState::Error => {
                    let error = cursor.log.remove(&seq).and_then(|e| e.error);
                    let error = error.unwrap_or_default();
                    // With a mark, the sandbox skips to it and throws the error itself.
                    let reply = match cursor.clock().mark(seq) {
                        Some(mark) => HostReply::Value(
                            json!({ "replay": true, "error": error, "clock": [mark.1, mark.2] }),
                        ),
                        None => HostReply::Throw(error),
                    };
                    return (Some(cursor.delivery.ticket(seq)), reply);
                }
                _ => {}
            }
        } else {
            if !cursor.add_log_bytes(json_size(&call_args).0) {
                return (None, HostReply::Abort);
            }
            cursor.track(LogEntry {
                seq,
                connector: SDK_NAMESPACE.into(),
                method: "step".into(),
                args: call_args,
                result: None,
                error: None,
                requires_approval: false,
                ephemeral: false,
                read_only: true,
                state: EntryState::Executing,
                approved_args: None,
                decisions: Vec::new(),
                delivered: None,
            });
        }
        (
            None,
            HostReply::Value(json!({ "replay": false, "seq": seq })),
        )
    }

    /// Ends a step begun this pass with its value or its error.
    fn step_end(&self, call: &HostCall) -> (Option<u64>, HostReply) {
        let seq = call.args.get("seq").and_then(Value::as_u64);
        let mut cursor = self.lock();
        let Some(mut entry) = seq.and_then(|s| cursor.log.get(&s)).cloned() else {
            return (None, HostReply::Throw("codemode.step: unknown step".into()));
        };
        if entry.method != "step" || entry.state != EntryState::Executing {
            return (
                None,
                HostReply::Throw("codemode.step: this step already ended".into()),
            );
        }
        let mark = call
            .args
            .get("clock")
            .and_then(Value::as_array)
            .and_then(|c| {
                let count = |i: usize| c.get(i).and_then(Value::as_u64);
                Some(StepMark(entry.seq, count(0)?, count(1)?))
            });
        if let Some(mark) = mark {
            cursor.step_mark(mark);
        }
        if call.method == "step_error" {
            let error = call
                .args
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("the step failed");
            let error = durable_text(error.to_string());
            if !cursor.add_log_bytes(error.len() as u64) {
                return (None, HostReply::Abort);
            }
            entry.state = EntryState::Error;
            entry.error = Some(error);
        } else {
            let value = call.args.get("value").cloned().unwrap_or(Value::Null);
            if nested_deeper_than(&value, MAX_DURABLE_DEPTH) {
                let name = entry.args["name"].as_str().unwrap_or_default().to_string();
                cursor.stop(Stop::Fail(too_deep(&format!("the value of step {name:?}"))));
                return (None, HostReply::Abort);
            }
            let (bytes, size) = json_size(&value);
            if size > MAX_DURABLE_VALUE_CHARS {
                let name = entry.args["name"].as_str().unwrap_or_default().to_string();
                cursor.stop(Stop::Fail(oversized(
                    &format!("the value of step {name:?}"),
                    size,
                )));
                return (None, HostReply::Abort);
            }
            if !cursor.add_log_bytes(bytes) {
                return (None, HostReply::Abort);
            }
            cursor.buffer(bytes);
            entry.state = EntryState::Applied;
            entry.result = Some(value);
        }
        // The code goes on after this reply: the step's result takes its place in the order.
        let ticket = cursor.delivery.ticket(entry.seq);
        entry.delivered = Some(ticket);
        cursor.set(entry);
        (Some(ticket), HostReply::Value(Value::Null))
    }
}
