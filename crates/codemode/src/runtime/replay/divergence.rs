//! How a pass diverged from its log, as the run's error names it.

use crate::executor::HostCall;
use crate::model::LogEntry;
use serde_json::Value;

/// Why a pass diverged from its log: the code made other calls than the recorded ones. The
/// run ends `error` with this message, which tells the model how to keep passes the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(in crate::runtime) enum Divergence {
    /// At `seq`, the log recorded one call and this pass made another.
    #[error("replay diverged at seq {seq}: the log recorded {recorded} but this pass called {called}. On every pass the code must make the same calls, in the same order, with the same arguments; wrap Date.now(), Math.random() and other nondeterminism in codemode.step(name, fn)")]
    Call {
        /// The seq.
        seq: u64,
        /// The recorded call, as `connector.method(args)` (arguments cut at 300 bytes).
        recorded: String,
        /// The call this pass made, in the same form.
        called: String,
    },
    /// The result due next in the recorded delivery order belongs to a call this pass
    /// never made.
    #[error("replay diverged: the log recorded that the result of seq {seq} ({name}) reached the code next, but this pass never made that call. On every pass the code must make the same calls with the same arguments; wrap Date.now(), Math.random() and other nondeterminism in codemode.step(name, fn)")]
    Delivery {
        /// The seq whose result was due.
        seq: u64,
        /// Its `connector.method`.
        name: String,
    },
}

impl Divergence {
    /// The divergence of `call`, made at `seq`, from `recorded`.
    pub(in crate::runtime) fn at(seq: u64, recorded: &LogEntry, call: &HostCall) -> Divergence {
        Divergence::Call {
            seq,
            recorded: describe_call(&recorded.connector, &recorded.method, &recorded.args),
            called: describe_call(&call.namespace, &call.method, &call.args),
        }
    }
}

/// `connector.method(args)`, the arguments cut at 300 bytes.
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
