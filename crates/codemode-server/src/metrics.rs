//! `GET /metrics` in the Prometheus text format (0.0.4), written by hand. An observer
//! ([`Runtime::observe`]) counts what this node does as it happens; the pending approvals are read from
//! the store at each scrape, so they cover every node sharing it. The same task logs each
//! status change (`info`) and connector call (`debug`) with its `execution_id`.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use codemode::{ExecutionStatus, Runtime, RuntimeEvent};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Bucket bounds, in seconds, of the pass and connector call durations.
const RUN_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Bucket bounds, in seconds, of the time an approval waits for a person.
const WAIT_BUCKETS: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0,
];

/// Bucket bounds, in seconds, of a store commit.
const COMMIT_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// A cumulative histogram with fixed bounds.
#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    fn observe(&mut self, v: f64) {
        for (bound, n) in self.bounds.iter().zip(self.counts.iter_mut()) {
            if v <= *bound {
                *n += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, n) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braced = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braced} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braced} {}", self.count);
    }
}

/// Where an execution this node saw stands, and since when.
struct Live {
    status: ExecutionStatus,
    since: Instant,
}

/// One connector method's calls: how many ended each way, and how long they ran.
struct CallStats {
    ok: u64,
    error: u64,
    seconds: Histogram,
}

impl CallStats {
    fn new() -> CallStats {
        CallStats {
            ok: 0,
            error: 0,
            seconds: Histogram::new(RUN_BUCKETS),
        }
    }

    fn record(&mut self, ok: bool, seconds: f64) {
        self.seconds.observe(seconds);
        if ok {
            self.ok += 1;
        } else {
            self.error += 1;
        }
    }
}

/// What the observer counted.
#[derive(Default)]
struct Counts {
    started: u64,
    statuses: BTreeMap<&'static str, u64>,
    passes: BTreeMap<&'static str, Histogram>,
    /// By connector, then method.
    calls: BTreeMap<String, BTreeMap<String, CallStats>>,
    in_flight: i64,
    approval_wait: BTreeMap<&'static str, Histogram>,
    limits: BTreeMap<&'static str, u64>,
    live: HashMap<String, Live>,
    commits: Option<Histogram>,
}

/// The counters of one server, fed by its runtime's events.
pub struct Metrics {
    counts: Mutex<Counts>,
    runtime: Runtime,
    /// The event streams whose open clients are counted, once set.
    event_streams: std::sync::OnceLock<Arc<crate::events::EventLog>>,
}

impl Metrics {
    /// Counts `runtime`'s events from now on, inline where each happens (no task, no
    /// wake-up per connector call), while this value lives.
    pub fn start(runtime: &Runtime) -> Arc<Metrics> {
        let metrics = Arc::new(Metrics {
            counts: Mutex::new(Counts::default()),
            runtime: runtime.clone(),
            event_streams: std::sync::OnceLock::new(),
        });
        let weak = Arc::downgrade(&metrics);
        runtime.observe(move |event| {
            if let Some(m) = weak.upgrade() {
                count(&m, event);
            }
        });
        let weak = Arc::downgrade(&metrics);
        runtime.observe_commits(move |took| {
            if let Some(m) = weak.upgrade() {
                m.lock()
                    .commits
                    .get_or_insert_with(|| Histogram::new(COMMIT_BUCKETS))
                    .observe(took.as_secs_f64());
            }
        });
        metrics
    }

    /// Also reports how many clients follow `events`' streams.
    pub fn count_event_streams(&self, events: Arc<crate::events::EventLog>) {
        let _ = self.event_streams.set(events);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `GET /metrics` route.
    pub fn route<S: Clone + Send + Sync + 'static>(self: Arc<Self>) -> MethodRouter<S> {
        get(move || {
            let m = self.clone();
            async move { m.scrape().await }
        })
    }

    async fn scrape(&self) -> Response {
        let pending = self.runtime.pending(None).await;
        let mut out = self.render();
        match pending {
            Ok(p) => {
                let mut paused: Vec<&str> = p.iter().map(|a| a.execution_id.as_str()).collect();
                paused.sort_unstable();
                paused.dedup();
                gauge(
                    &mut out,
                    "codemode_pending_approvals",
                    "Actions waiting for approval, in the store (every node).",
                    p.len() as i64,
                );
                gauge(
                    &mut out,
                    "codemode_paused_executions",
                    "Executions paused for approval, in the store (every node).",
                    paused.len() as i64,
                );
            }
            Err(e) => tracing::warn!(error = %e, "metrics: cannot read the pending actions"),
        }
        if let Some(events) = self.event_streams.get() {
            gauge(
                &mut out,
                "codemode_event_stream_clients",
                "Clients following an event stream of this node (/api/events, /api/executions/{id}/events).",
                events.clients() as i64,
            );
        }
        let content_type = "text/plain; version=0.0.4; charset=utf-8";
        ([(header::CONTENT_TYPE, content_type)], out).into_response()
    }

    /// The counters in the Prometheus text format.
    pub fn render(&self) -> String {
        let c = self.lock();
        let mut out = String::new();
        head(
            &mut out,
            "codemode_executions_started_total",
            "counter",
            "Executions this node began (or first saw begin a pass since it started).",
        );
        let _ = writeln!(out, "codemode_executions_started_total {}", c.started);
        head(
            &mut out,
            "codemode_execution_status_changes_total",
            "counter",
            "Status changes this node made, by the new status.",
        );
        for (status, n) in &c.statuses {
            let _ = writeln!(
                out,
                "codemode_execution_status_changes_total{{status=\"{status}\"}} {n}"
            );
        }
        head(
            &mut out,
            "codemode_pass_duration_seconds",
            "histogram",
            "Wall time of a pass, by the status it ended in.",
        );
        for (status, h) in &c.passes {
            h.write(
                &mut out,
                "codemode_pass_duration_seconds",
                &format!("status=\"{status}\""),
            );
        }
        head(
            &mut out,
            "codemode_connector_calls_total",
            "counter",
            "Connector calls run (replays excluded), by outcome.",
        );
        for (connector, methods) in &c.calls {
            for (method, stats) in methods {
                let labels = call_labels(connector, method);
                for (outcome, n) in [("error", stats.error), ("ok", stats.ok)] {
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "codemode_connector_calls_total{{{labels},outcome=\"{outcome}\"}} {n}"
                        );
                    }
                }
            }
        }
        head(
            &mut out,
            "codemode_connector_call_duration_seconds",
            "histogram",
            "How long connectors ran a call.",
        );
        for (connector, methods) in &c.calls {
            for (method, stats) in methods {
                stats.seconds.write(
                    &mut out,
                    "codemode_connector_call_duration_seconds",
                    &call_labels(connector, method),
                );
            }
        }
        gauge(
            &mut out,
            "codemode_connector_calls_in_flight",
            "Connector calls running now on this node.",
            c.in_flight,
        );
        head(
            &mut out,
            "codemode_approval_wait_seconds",
            "histogram",
            "How long a pause this node made waited for a person, by what came next.",
        );
        for (next, h) in &c.approval_wait {
            h.write(
                &mut out,
                "codemode_approval_wait_seconds",
                &format!("next=\"{next}\""),
            );
        }
        head(
            &mut out,
            "codemode_sandbox_limit_hits_total",
            "counter",
            "Runs ended by a sandbox limit (time, memory, stack).",
        );
        for (limit, n) in &c.limits {
            let _ = writeln!(
                out,
                "codemode_sandbox_limit_hits_total{{limit=\"{limit}\"}} {n}"
            );
        }
        head(
            &mut out,
            "codemode_store_commit_duration_seconds",
            "histogram",
            "How long the store took to commit a pass's or a decision's writes.",
        );
        c.commits
            .clone()
            .unwrap_or_else(|| Histogram::new(COMMIT_BUCKETS))
            .write(&mut out, "codemode_store_commit_duration_seconds", "");
        head(
            &mut out,
            "codemode_trace_spans_exported_total",
            "counter",
            "Trace spans the OTLP collector accepted (0 while telemetry is off).",
        );
        let _ = writeln!(
            out,
            "codemode_trace_spans_exported_total {}",
            crate::telemetry::exported_spans()
        );
        head(
            &mut out,
            "codemode_trace_spans_dropped_total",
            "counter",
            "Trace spans dropped: the export queue was full, or the collector did not take them.",
        );
        let _ = writeln!(
            out,
            "codemode_trace_spans_dropped_total {}",
            crate::telemetry::dropped_spans()
        );
        out
    }
}

/// Counts one event and logs it: each status change at `info`, each connector call at
/// `debug`, with its `execution_id`.
fn count(m: &Metrics, event: &RuntimeEvent) {
    match event {
        RuntimeEvent::StatusChanged {
            execution_id,
            status,
            error,
        } => {
            tracing::info!(execution_id = %execution_id, status = status.as_str(), "execution status changed");
            let mut c = m.lock();
            if let Some(seconds) = status_changed(&mut c, execution_id.clone(), *status) {
                c.passes
                    .entry(status.as_str())
                    .or_insert_with(|| Histogram::new(RUN_BUCKETS))
                    .observe(seconds);
            }
            if let Some(which) = error.as_deref().and_then(limit_hit) {
                *c.limits.entry(which).or_default() += 1;
            }
        }
        RuntimeEvent::CallStarted { .. } => m.lock().in_flight += 1,
        RuntimeEvent::CallEnded {
            execution_id,
            seq,
            connector,
            method,
            duration_ms,
            ok,
        } => {
            tracing::debug!(execution_id = %execution_id, seq, connector = %connector, method = %method, duration_ms, ok, "connector call ended");
            let mut guard = m.lock();
            let c = &mut *guard;
            c.in_flight -= 1;
            let seconds = *duration_ms as f64 / 1000.0;
            // Looked up by reference: the names are copied only the first time they are seen.
            match c
                .calls
                .get_mut(connector.as_str())
                .and_then(|methods| methods.get_mut(method.as_str()))
            {
                Some(stats) => stats.record(*ok, seconds),
                None => c
                    .calls
                    .entry(connector.clone())
                    .or_default()
                    .entry(method.clone())
                    .or_insert_with(CallStats::new)
                    .record(*ok, seconds),
            }
        }
        _ => {}
    }
}

/// Records a status change; when it ends a pass, the pass's seconds.
fn status_changed(c: &mut Counts, id: String, status: ExecutionStatus) -> Option<f64> {
    let now = Instant::now();
    *c.statuses.entry(status.as_str()).or_default() += 1;
    let before = c.live.remove(&id);
    let mut ended = None;
    match &before {
        None if status == ExecutionStatus::Running => c.started += 1,
        Some(l) if l.status == ExecutionStatus::Running && status != ExecutionStatus::Running => {
            ended = Some(now.duration_since(l.since).as_secs_f64());
        }
        Some(l) if l.status == ExecutionStatus::Paused => {
            let next = if status == ExecutionStatus::Running {
                "approved"
            } else {
                status.as_str()
            };
            c.approval_wait
                .entry(next)
                .or_insert_with(|| Histogram::new(WAIT_BUCKETS))
                .observe(now.duration_since(l.since).as_secs_f64());
        }
        _ => {}
    }
    if matches!(status, ExecutionStatus::Running | ExecutionStatus::Paused) {
        c.live.insert(id, Live { status, since: now });
    }
    ended
}

/// Which sandbox limit an execution's error message reports, if any.
fn limit_hit(error: &str) -> Option<&'static str> {
    [
        ("Time limit:", "time"),
        ("Memory limit:", "memory"),
        ("Stack limit:", "stack"),
    ]
    .into_iter()
    .find(|(prefix, _)| error.starts_with(prefix))
    .map(|(_, name)| name)
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, help: &str, value: i64) {
    head(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

fn call_labels(connector: &str, method: &str) -> String {
    format!(
        "connector=\"{}\",method=\"{}\"",
        escape(connector),
        escape(method)
    )
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_and_an_approval_wait_are_timed_and_a_new_run_counted_once() {
        let mut c = Counts::default();
        let running = ExecutionStatus::Running;
        assert_eq!(status_changed(&mut c, "a".into(), running), None);
        assert!(status_changed(&mut c, "a".into(), ExecutionStatus::Paused).is_some());
        assert_eq!(status_changed(&mut c, "a".into(), running), None);
        assert!(status_changed(&mut c, "a".into(), ExecutionStatus::Completed).is_some());
        assert_eq!(c.started, 1);
        assert_eq!(c.approval_wait["approved"].count, 1);
        assert!(c.live.is_empty());
        assert_eq!(limit_hit("Time limit: the code ran for more"), Some("time"));
        assert_eq!(escape("a\"b\\c"), "a\\\"b\\\\c");
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let mut h = Histogram::new(&[1.0, 2.0]);
        h.observe(0.5);
        h.observe(1.5);
        h.observe(9.0);
        let mut out = String::new();
        h.write(&mut out, "x", "");
        assert!(out.contains("x_bucket{le=\"1\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"2\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_count 3\n"), "{out}");
    }
}
