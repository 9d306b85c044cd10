//! `GET /metrics` in the Prometheus text format (0.0.4), encoded by `prometheus-client`. An
//! observer ([`Runtime::observe`]) counts what this node does as it happens; the pending
//! approvals are read from the store at each scrape, so they cover every node sharing it. The
//! same task logs each status change (`info`) and connector call (`debug`) with its
//! `execution_id`.
//!
//! Labelled series are written sorted by their labels (connector, then method; status…), so
//! the text reads the same from one scrape to the next.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use codemode::{ExecutionStatus, Runtime, RuntimeEvent};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    prometheus_text, DescriptorEncoder, EncodeMetric, MetricEncoder,
};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
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

fn run_histogram() -> Histogram {
    Histogram::new(RUN_BUCKETS.iter().copied())
}

fn wait_histogram() -> Histogram {
    Histogram::new(WAIT_BUCKETS.iter().copied())
}

/// Locks `m`, taking the data of a holder that panicked (counts stay usable).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Metrics of one type keyed by one label's value, each made at its first use and written in
/// the order of that value.
#[derive(Debug, Clone)]
struct ByLabel<M> {
    label: &'static str,
    metrics: Arc<Mutex<BTreeMap<&'static str, M>>>,
    make: fn() -> M,
}

impl<M: Clone> ByLabel<M> {
    fn new(label: &'static str, make: fn() -> M) -> Self {
        ByLabel {
            label,
            metrics: Arc::default(),
            make,
        }
    }

    /// The metric of `value` (shared: counting on it counts here).
    fn get(&self, value: &'static str) -> M {
        lock(&self.metrics)
            .entry(value)
            .or_insert_with(self.make)
            .clone()
    }
}

impl<M: EncodeMetric + TypedMetric> EncodeMetric for ByLabel<M> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (value, metric) in lock(&self.metrics).iter() {
            metric.encode(encoder.encode_family(&[(self.label, *value)])?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }

    fn is_empty(&self) -> bool {
        lock(&self.metrics).is_empty()
    }
}

/// One connector method's calls: how many ended each way, and how long they ran.
#[derive(Debug)]
struct CallStats {
    ok: Counter,
    error: Counter,
    seconds: Histogram,
}

impl CallStats {
    fn new() -> CallStats {
        CallStats {
            ok: Counter::default(),
            error: Counter::default(),
            seconds: run_histogram(),
        }
    }

    fn record(&self, ok: bool, seconds: f64) {
        self.seconds.observe(seconds);
        if ok {
            self.ok.inc();
        } else {
            self.error.inc();
        }
    }
}

/// Every connector method's calls, by connector, then method.
type CallMap = Arc<Mutex<BTreeMap<String, BTreeMap<String, CallStats>>>>;

/// `codemode_connector_calls_total{connector,method,outcome}`: an outcome never seen has no
/// series.
#[derive(Debug)]
struct CallCounts(CallMap);

impl EncodeMetric for CallCounts {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (connector, methods) in lock(&self.0).iter() {
            for (method, stats) in methods {
                for (outcome, counter) in [("error", &stats.error), ("ok", &stats.ok)] {
                    if counter.get() > 0 {
                        let labels = [
                            ("connector", connector.as_str()),
                            ("method", method.as_str()),
                            ("outcome", outcome),
                        ];
                        counter.encode(encoder.encode_family(&labels)?)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }

    fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }
}

/// `codemode_connector_call_duration_seconds{connector,method}`.
#[derive(Debug)]
struct CallDurations(CallMap);

impl EncodeMetric for CallDurations {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (connector, methods) in lock(&self.0).iter() {
            for (method, stats) in methods {
                let labels = [
                    ("connector", connector.as_str()),
                    ("method", method.as_str()),
                ];
                stats.seconds.encode(encoder.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }

    fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }
}

/// The trace spans the OTLP exporter sent and dropped, read at each scrape.
#[derive(Debug)]
struct TraceSpans;

impl Collector for TraceSpans {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, value) in [
            (
                "codemode_trace_spans_exported",
                "Trace spans the OTLP collector accepted (0 while telemetry is off).",
                crate::telemetry::exported_spans(),
            ),
            (
                "codemode_trace_spans_dropped",
                "Trace spans dropped: the export queue was full, or the collector did not take them.",
                crate::telemetry::dropped_spans(),
            ),
        ] {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)?;
        }
        Ok(())
    }
}

/// Where an execution this node saw stands, and since when.
struct Live {
    status: ExecutionStatus,
    since: Instant,
}

/// What one status change meant for the counts.
#[derive(Debug, Default, PartialEq)]
struct Transition {
    /// An execution this node had not seen began a pass.
    started: bool,
    /// A pass ended: its seconds.
    pass_seconds: Option<f64>,
    /// A pause ended: what came next (`approved` or the new status) and its seconds.
    waited: Option<(&'static str, f64)>,
}

/// The counters of one server, fed by its runtime's events.
pub struct Metrics {
    registry: Registry,
    started: Counter,
    statuses: ByLabel<Counter>,
    passes: ByLabel<Histogram>,
    calls: CallMap,
    in_flight: Gauge,
    approval_wait: ByLabel<Histogram>,
    limits: ByLabel<Counter>,
    commits: Histogram,
    live: Mutex<HashMap<String, Live>>,
    runtime: Runtime,
    /// The event streams whose open clients are counted, once set.
    event_streams: std::sync::OnceLock<Arc<crate::events::EventLog>>,
}

impl Metrics {
    /// Counts `runtime`'s events from now on, inline where each happens (no task, no
    /// wake-up per connector call), while this value lives.
    pub fn start(runtime: &Runtime) -> Arc<Metrics> {
        let metrics = Arc::new(Metrics::new(runtime.clone()));
        let weak = Arc::downgrade(&metrics);
        runtime.observe(move |event| {
            if let Some(m) = weak.upgrade() {
                count(&m, event);
            }
        });
        let weak = Arc::downgrade(&metrics);
        runtime.observe_commits(move |took| {
            if let Some(m) = weak.upgrade() {
                m.commits.observe(took.as_secs_f64());
            }
        });
        metrics
    }

    /// The registry, in the order the families are written.
    fn new(runtime: Runtime) -> Metrics {
        let started = Counter::default();
        let statuses = ByLabel::new("status", Counter::default);
        let passes = ByLabel::new("status", run_histogram);
        let calls = CallMap::default();
        let in_flight = Gauge::default();
        let approval_wait = ByLabel::new("next", wait_histogram);
        let limits = ByLabel::new("limit", Counter::default);
        let commits = Histogram::new(COMMIT_BUCKETS.iter().copied());
        // The help texts end without a full stop: the registry adds one.
        let mut registry = Registry::default();
        registry.register(
            "codemode_executions_started",
            "Executions this node began (or first saw begin a pass since it started)",
            started.clone(),
        );
        registry.register(
            "codemode_execution_status_changes",
            "Status changes this node made, by the new status",
            statuses.clone(),
        );
        registry.register(
            "codemode_pass_duration_seconds",
            "Wall time of a pass, by the status it ended in",
            passes.clone(),
        );
        registry.register(
            "codemode_connector_calls",
            "Connector calls run (replays excluded), by outcome",
            CallCounts(calls.clone()),
        );
        registry.register(
            "codemode_connector_call_duration_seconds",
            "How long connectors ran a call",
            CallDurations(calls.clone()),
        );
        registry.register(
            "codemode_connector_calls_in_flight",
            "Connector calls running now on this node",
            in_flight.clone(),
        );
        registry.register(
            "codemode_approval_wait_seconds",
            "How long a pause this node made waited for a person, by what came next",
            approval_wait.clone(),
        );
        registry.register(
            "codemode_sandbox_limit_hits",
            "Runs ended by a sandbox limit (time, memory, stack)",
            limits.clone(),
        );
        registry.register(
            "codemode_store_commit_duration_seconds",
            "How long the store took to commit a pass's or a decision's writes",
            commits.clone(),
        );
        registry.register_collector(Box::new(TraceSpans));
        Metrics {
            registry,
            started,
            statuses,
            passes,
            calls,
            in_flight,
            approval_wait,
            limits,
            commits,
            live: Mutex::default(),
            runtime,
            event_streams: std::sync::OnceLock::new(),
        }
    }

    /// Also reports how many clients follow `events`' streams.
    pub fn count_event_streams(&self, events: Arc<crate::events::EventLog>) {
        let _ = self.event_streams.set(events);
    }

    /// The `GET /metrics` route; served only through [`crate::routes`], behind the token
    /// check and the loopback rule.
    pub(crate) fn route<S: Clone + Send + Sync + 'static>(self: Arc<Self>) -> MethodRouter<S> {
        get(move || {
            let m = self.clone();
            async move { m.scrape().await }
        })
    }

    async fn scrape(&self) -> Response {
        let pending = self.runtime.pending(None).await;
        let mut out = self.render();
        // What is read at the scrape: the store's pending actions, the open event streams.
        let mut now = Registry::default();
        match pending {
            Ok(p) => {
                let mut paused: Vec<&str> = p.iter().map(|a| a.execution_id.as_str()).collect();
                paused.sort_unstable();
                paused.dedup();
                now.register(
                    "codemode_pending_approvals",
                    "Actions waiting for approval, in the store (every node)",
                    ConstGauge::new(p.len() as i64),
                );
                now.register(
                    "codemode_paused_executions",
                    "Executions paused for approval, in the store (every node)",
                    ConstGauge::new(paused.len() as i64),
                );
            }
            Err(e) => tracing::warn!(error = %e, "metrics: cannot read the pending actions"),
        }
        if let Some(events) = self.event_streams.get() {
            now.register(
                "codemode_event_stream_clients",
                "Clients following an event stream of this node (/api/events, /api/executions/{id}/events)",
                ConstGauge::new(events.clients() as i64),
            );
        }
        if let Err(e) = prometheus_text::encode(&mut out, &now) {
            tracing::warn!(error = %e, "metrics: cannot encode the scrape's gauges");
        }
        let content_type = prometheus_text::CONTENT_TYPE;
        ([(header::CONTENT_TYPE, content_type)], out).into_response()
    }

    /// The counters in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_text::encode(&mut out, &self.registry) {
            tracing::warn!(error = %e, "metrics: cannot encode the counters");
        }
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
            let t = status_changed(
                &mut lock(&m.live),
                execution_id.clone(),
                *status,
                Instant::now(),
            );
            m.statuses.get(status.as_str()).inc();
            if t.started {
                m.started.inc();
            }
            if let Some(seconds) = t.pass_seconds {
                m.passes.get(status.as_str()).observe(seconds);
            }
            if let Some((next, seconds)) = t.waited {
                m.approval_wait.get(next).observe(seconds);
            }
            if let Some(which) = error.as_deref().and_then(limit_hit) {
                m.limits.get(which).inc();
            }
        }
        RuntimeEvent::CallStarted { .. } => {
            m.in_flight.inc();
        }
        RuntimeEvent::CallEnded {
            execution_id,
            seq,
            connector,
            method,
            duration_ms,
            ok,
        } => {
            tracing::debug!(execution_id = %execution_id, seq, connector = %connector, method = %method, duration_ms, ok, "connector call ended");
            m.in_flight.dec();
            let seconds = *duration_ms as f64 / 1000.0;
            let mut calls = lock(&m.calls);
            // Looked up by reference: the names are copied only the first time they are seen.
            match calls
                .get(connector.as_str())
                .and_then(|methods| methods.get(method.as_str()))
            {
                Some(stats) => stats.record(*ok, seconds),
                None => calls
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

/// Records a status change at `now` in `live` (the running and paused executions this node
/// saw): whether a run began, and what ended.
fn status_changed(
    live: &mut HashMap<String, Live>,
    id: String,
    status: ExecutionStatus,
    now: Instant,
) -> Transition {
    let mut t = Transition::default();
    match live.remove(&id) {
        None if status == ExecutionStatus::Running => t.started = true,
        Some(l) if l.status == ExecutionStatus::Running && status != ExecutionStatus::Running => {
            t.pass_seconds = Some(now.duration_since(l.since).as_secs_f64());
        }
        Some(l) if l.status == ExecutionStatus::Paused => {
            let next = if status == ExecutionStatus::Running {
                "approved"
            } else {
                status.as_str()
            };
            t.waited = Some((next, now.duration_since(l.since).as_secs_f64()));
        }
        _ => {}
    }
    if matches!(status, ExecutionStatus::Running | ExecutionStatus::Paused) {
        live.insert(id, Live { status, since: now });
    }
    t
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_and_an_approval_wait_are_timed_and_a_new_run_counted_once() {
        let mut live = HashMap::new();
        let at = Instant::now();
        let running = ExecutionStatus::Running;
        let t = status_changed(&mut live, "a".into(), running, at);
        assert_eq!(
            t,
            Transition {
                started: true,
                ..Transition::default()
            }
        );
        let t = status_changed(&mut live, "a".into(), ExecutionStatus::Paused, at);
        assert!(t.pass_seconds.is_some() && !t.started);
        let t = status_changed(&mut live, "a".into(), running, at);
        assert_eq!(t.waited.map(|(next, _)| next), Some("approved"));
        assert!(!t.started, "a resumed run is not a new one");
        let t = status_changed(&mut live, "a".into(), ExecutionStatus::Completed, at);
        assert!(t.pass_seconds.is_some());
        assert!(live.is_empty());
        assert_eq!(limit_hit("Time limit: the code ran for more"), Some("time"));
        assert_eq!(limit_hit("Boom"), None);
    }

    #[test]
    fn the_text_is_the_prometheus_format_with_sorted_escaped_labels() {
        let mut registry = Registry::default();
        let calls = CallMap::default();
        registry.register("x_calls", "Calls", CallCounts(calls.clone()));
        registry.register("x_seconds", "Seconds", CallDurations(calls.clone()));
        let statuses: ByLabel<Counter> = ByLabel::new("status", Counter::default);
        registry.register("x_statuses", "Statuses", statuses.clone());
        {
            let mut map = lock(&calls);
            let stats = map
                .entry("b\\\"x\n".into())
                .or_default()
                .entry("m".into())
                .or_insert_with(CallStats::new);
            stats.record(true, 0.5);
            stats.record(true, 9.0);
            map.entry("a".into())
                .or_default()
                .entry("m".into())
                .or_insert_with(CallStats::new)
                .record(false, 0.001);
        }
        statuses.get("paused").inc();
        statuses.get("completed").inc_by(2);
        let mut out = String::new();
        prometheus_text::encode(&mut out, &registry).unwrap();
        for line in [
            "# HELP x_calls_total Calls.\n# TYPE x_calls_total counter\n",
            "x_calls_total{connector=\"a\",method=\"m\",outcome=\"error\"} 1\n",
            "x_calls_total{connector=\"b\\\\\\\"x\\n\",method=\"m\",outcome=\"ok\"} 2\n",
            "x_seconds_bucket{connector=\"a\",method=\"m\",le=\"0.005\"} 1\n",
            "x_seconds_bucket{connector=\"b\\\\\\\"x\\n\",method=\"m\",le=\"1\"} 1\n",
            "x_seconds_bucket{connector=\"b\\\\\\\"x\\n\",method=\"m\",le=\"+Inf\"} 2\n",
            "x_seconds_count{connector=\"b\\\\\\\"x\\n\",method=\"m\"} 2\n",
            "x_statuses_total{status=\"completed\"} 2\nx_statuses_total{status=\"paused\"} 1\n",
        ] {
            assert!(out.contains(line), "{line:?} in\n{out}");
        }
        assert!(!out.contains("outcome=\"ok\"} 0"), "{out}");
        assert!(
            out.find("connector=\"a\"") < out.find("connector=\"b"),
            "sorted by connector: {out}"
        );
    }
}
