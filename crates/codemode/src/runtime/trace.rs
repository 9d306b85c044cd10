//! Spans of passes, connector calls, decisions and store commits (`tracing`, target
//! [`TRACE_TARGET`]), and the trace context an execution keeps so that every later pass
//! continues the trace of its first.
//!
//! The runtime names no tracing backend: it opens `tracing` spans, and a host that exports
//! them gives the builder a [`TraceCarrier`], which turns a span into text kept on the
//! execution (a W3C `traceparent`) and back. With no carrier nothing is kept; with no
//! subscriber interested in [`TRACE_TARGET`] at `info`, the spans cost a disabled callsite.

use super::Runtime;
use crate::executor::HostCall;
use crate::model::{DecisionKind, Execution};
use crate::store::{Commit, StoreError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{field, Instrument, Span};

/// The `tracing` target of every span the runtime opens.
pub const TRACE_TARGET: &str = "codemode::trace";

/// Turns a span into trace context kept on an execution, and back; the runtime never reads
/// the text.
pub trait TraceCarrier: Send + Sync {
    /// The trace context of `span` as text to keep on the execution (a W3C `traceparent`),
    /// or `None` when it has none.
    fn save(&self, span: &Span) -> Option<String>;

    /// Makes `span`, not yet entered, a child of the context `saved` (text [`save`] returned
    /// earlier); text it cannot read is ignored.
    ///
    /// [`save`]: TraceCarrier::save
    fn restore(&self, span: &Span, saved: &str);

    /// Whether connector call spans carry the call's arguments (default: never).
    fn include_args(&self) -> bool {
        false
    }
}

/// A function [`Runtime::observe_commits`] calls with the time each store commit took.
pub type CommitObserver = Arc<dyn Fn(Duration) + Send + Sync>;

/// The pass number of a pass starting now: one more than the approvals recorded before it
/// (a take-over after a crash shares the number of the pass it replaces).
/// Numbers are recorded as `i64`: OpenTelemetry has no unsigned integers (a `u64` field
/// would be exported as text).
fn pass_number(execution: &Execution) -> i64 {
    1 + execution
        .decisions
        .iter()
        .filter(|d| d.kind == DecisionKind::Approve)
        .count() as i64
}

impl Runtime {
    /// Calls `observer` with the time each store commit takes, inline after it returns.
    pub fn observe_commits(&self, observer: impl Fn(Duration) + Send + Sync + 'static) {
        self.inner
            .commit_observers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::new(observer));
    }

    /// Commits through the store inside a `codemode.store.commit` span (a child of `parent`,
    /// or of the current span) and reports the time it took to the commit observers.
    pub(super) async fn commit_traced(
        &self,
        commit: &Commit,
        parent: Option<&Span>,
    ) -> Result<bool, StoreError> {
        let to = commit.transition.as_ref().map(|t| t.to.as_str());
        // No parent given: the current span (none at all makes a root, as the macro would).
        let parent = parent.cloned().unwrap_or_else(Span::current);
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            parent: &parent,
            "codemode.store.commit",
            codemode.execution_id = %commit.execution_id,
            codemode.entries = commit.entries.len() as i64,
            codemode.to = to,
            codemode.won = field::Empty,
        );
        let started = Instant::now();
        let won = self
            .inner
            .store
            .commit(&self.inner.name, commit)
            .instrument(span.clone())
            .await;
        let took = started.elapsed();
        if let Ok(won) = won {
            span.record("codemode.won", won);
        }
        for observer in self
            .inner
            .commit_observers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            observer(took);
        }
        won
    }

    /// The span of a pass of `execution` about to start: a child of `parent` when given
    /// (the approval that starts it), else of the first pass's saved context when there is
    /// one, else of the current span.
    pub(super) fn pass_span(&self, execution: &Execution, parent: Option<&Span>) -> Span {
        let pass = pass_number(execution);
        let contextual = parent.cloned().unwrap_or_else(Span::current);
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            parent: &contextual,
            "codemode.pass",
            codemode.execution_id = %execution.id,
            codemode.runtime = %self.inner.name,
            codemode.pass = pass,
            codemode.status = field::Empty,
        );
        if parent.is_none() {
            self.restore_trace(&span, execution);
        }
        span
    }

    /// The span of a decision (`approve`, `reject`) about a held execution, a child of its
    /// first pass's saved context when there is one.
    pub(super) fn decision_span(&self, execution: &Execution, decision: &'static str) -> Span {
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            "codemode.decision",
            codemode.execution_id = %execution.id,
            codemode.runtime = %self.inner.name,
            codemode.decision = decision,
            codemode.by = field::Empty,
            codemode.seqs = field::Empty,
        );
        self.restore_trace(&span, execution);
        span
    }

    /// Makes `span` a child of the execution's saved trace context, if any.
    fn restore_trace(&self, span: &Span, execution: &Execution) {
        if let (Some(carrier), Some(saved)) = (&self.inner.trace, &execution.traceparent) {
            if !span.is_disabled() {
                carrier.restore(span, saved);
            }
        }
    }

    /// The trace context of a first pass's span, to keep on its execution.
    pub(super) fn save_trace(&self, span: &Span) -> Option<String> {
        match &self.inner.trace {
            Some(carrier) if !span.is_disabled() => carrier.save(span),
            _ => None,
        }
    }

    /// The span of one connector call of the pass whose span is `pass`: `replayed` when the
    /// log answers it. Its `codemode.outcome` (and, live, `codemode.duration_ms`) are
    /// recorded as it ends.
    pub(super) fn call_span(&self, pass: &Span, call: &HostCall, seq: u64, replayed: bool) -> Span {
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            parent: pass,
            "codemode.call",
            codemode.connector = %call.namespace,
            codemode.method = %call.method,
            codemode.seq = i64::try_from(seq).unwrap_or(i64::MAX),
            codemode.replayed = replayed,
            codemode.outcome = field::Empty,
            codemode.duration_ms = field::Empty,
            codemode.args = field::Empty,
            otel.status_code = field::Empty,
        );
        if span.is_disabled() {
            return span;
        }
        if self
            .inner
            .trace
            .as_ref()
            .is_some_and(|carrier| carrier.include_args())
        {
            let args = serde_json::to_string(&call.args).unwrap_or_default();
            span.record("codemode.args", args);
        }
        span
    }
}

/// Records how a call ended on its span: `ok`, `error`, `pending`, `rejected`, `aborted`.
pub(super) fn call_outcome(span: &Span, outcome: &'static str) {
    span.record("codemode.outcome", outcome);
    if outcome == "error" {
        span.record("otel.status_code", "ERROR");
    }
}
