//! The runtime keeps a first pass's trace context through a host's `TraceCarrier` and hands it
//! back for the decision and the pass an approval starts; with no carrier (or no subscriber
//! interested in its spans) nothing is kept. Commit observers see every commit.

use codemode::{Outcome, Runtime, RustConnector, RustTool, TraceCarrier, TRACE_TARGET};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Span, Subscriber};

/// A subscriber that enables the runtime's spans only.
struct Spans(AtomicU64);

impl Subscriber for Spans {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == TRACE_TARGET
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Saves `ctx-N` for the Nth span saved, and records what it is asked to restore.
#[derive(Default)]
struct Carrier {
    saved: AtomicU64,
    restored: Mutex<Vec<String>>,
}

impl TraceCarrier for Carrier {
    fn save(&self, _span: &Span) -> Option<String> {
        Some(format!(
            "ctx-{}",
            self.saved.fetch_add(1, Ordering::Relaxed) + 1
        ))
    }
    fn restore(&self, _span: &Span, saved: &str) {
        self.restored.lock().unwrap().push(saved.to_string());
    }
}

fn runtime(dir: &std::path::Path, carrier: Option<Arc<Carrier>>) -> Runtime {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("t.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let notes = RustConnector::new("notes")
        .tool(RustTool::new("count", |_a, _c| async { Ok(json!(3)) }).read_only())
        .tool(RustTool::new("add", |a, _c| async move { Ok(a) }));
    let mut builder = Runtime::builder(store, executor).connector(notes);
    if let Some(carrier) = carrier {
        builder = builder.trace_carrier(carrier);
    }
    builder.build().unwrap()
}

const CODE: &str = "async () => { await notes.count(); return await notes.add({ n: 1 }); }";

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// One test, in this order: tracing caches per call site whether any subscriber wants its
/// spans, for every thread, so a subscriber of a test running at the same time would make
/// the "no subscriber" case see live spans.
#[test]
fn a_carrier_keeps_the_first_pass_context_only_when_spans_are_on() {
    without_a_subscriber_or_a_carrier_nothing_is_kept();
    the_first_pass_context_is_kept_and_restored_for_the_approval();
}

fn the_first_pass_context_is_kept_and_restored_for_the_approval() {
    let dir = tempfile::tempdir().unwrap();
    let carrier = Arc::new(Carrier::default());
    let rt = runtime(dir.path(), Some(carrier.clone()));
    let commits = Arc::new(AtomicU64::new(0));
    let seen = commits.clone();
    rt.observe_commits(move |_| {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    let subscriber = Spans(AtomicU64::new(0));
    tracing::subscriber::with_default(subscriber, || {
        block_on(async {
            let paused = rt.call(CODE).await.unwrap();
            let Outcome::Paused { execution_id, .. } = &paused else {
                panic!("{paused:?}")
            };
            let kept = rt.execution(execution_id).await.unwrap().unwrap();
            assert_eq!(kept.traceparent.as_deref(), Some("ctx-1"));
            let done = rt.approve(execution_id).await.unwrap();
            assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
            let kept = rt.execution(execution_id).await.unwrap().unwrap();
            assert_eq!(
                kept.traceparent.as_deref(),
                Some("ctx-1"),
                "kept as first saved"
            );
        })
    });
    // Saved once, for the first pass; the decision restored it (its pass is its child).
    assert_eq!(carrier.saved.load(Ordering::Relaxed), 1);
    assert_eq!(*carrier.restored.lock().unwrap(), vec!["ctx-1".to_string()]);
    assert!(commits.load(Ordering::Relaxed) >= 3, "pause, approval, end");
}

fn without_a_subscriber_or_a_carrier_nothing_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let carrier = Arc::new(Carrier::default());
    // A carrier but no subscriber: the spans are disabled, and nothing is saved.
    let rt = runtime(dir.path(), Some(carrier.clone()));
    block_on(async {
        let paused = rt.call(CODE).await.unwrap();
        let kept = rt.execution(paused.execution_id()).await.unwrap().unwrap();
        assert_eq!(kept.traceparent, None);
    });
    assert_eq!(carrier.saved.load(Ordering::Relaxed), 0);

    // A subscriber but no carrier.
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path(), None);
    tracing::subscriber::with_default(Spans(AtomicU64::new(0)), || {
        block_on(async {
            let paused = rt.call(CODE).await.unwrap();
            let kept = rt.execution(paused.execution_id()).await.unwrap().unwrap();
            assert_eq!(kept.traceparent, None);
            let done = rt.approve(paused.execution_id()).await.unwrap();
            assert!(matches!(done, Outcome::Completed { .. }), "{done:?}");
        })
    });
}
