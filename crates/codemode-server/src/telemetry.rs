//! OpenTelemetry traces: the runtime's `tracing` spans (target [`TRACE_TARGET`]) exported
//! over OTLP/HTTP protobuf, the W3C `traceparent` of incoming HTTP and MCP requests as their
//! parent, and the [`TraceCarrier`] that keeps an execution's first pass context for the
//! passes after a pause.
//!
//! Export never holds a run up: finished spans go into a bounded queue that one thread of
//! its own drains in batches; when the queue is full (a slow or unreachable collector) a
//! span is dropped and counted ([`dropped_spans`], in `/metrics`).

use crate::config::{check_endpoint, TelemetrySection, DEFAULT_MAX_QUEUE};
use axum::extract::Request;
use codemode::{TraceCarrier, TRACE_TARGET};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::Context;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The most spans sent in one export request.
const BATCH: usize = 512;
/// How long a span may wait for its batch to fill before the batch is sent.
const BATCH_DELAY: Duration = Duration::from_millis(500);
/// How long one export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the end of the process waits for the queued spans to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

static DROPPED: AtomicU64 = AtomicU64::new(0);
static EXPORTED: AtomicU64 = AtomicU64::new(0);

/// Spans dropped since the process started: the queue was full, or their export failed.
pub fn dropped_spans() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Spans the collector accepted since the process started.
pub fn exported_spans() -> u64 {
    EXPORTED.load(Ordering::Relaxed)
}

static CARRIER: std::sync::OnceLock<Arc<dyn TraceCarrier>> = std::sync::OnceLock::new();

/// The carrier of the telemetry [`init`] started, for the runtime's builder; `None` while
/// telemetry is off.
pub fn carrier() -> Option<Arc<dyn TraceCarrier>> {
    CARRIER.get().cloned()
}

/// Installs the process's `tracing` subscriber: log lines on stderr (levels from
/// `CODEMODE_LOG`, default `warn`; `log_format` `text` or `json`) and, when an OTLP endpoint
/// is set (`[telemetry]` of the `config` file, or `OTEL_EXPORTER_OTLP_ENDPOINT`), the
/// OpenTelemetry layer. Keep what it returns until the process ends: dropping it sends the
/// spans still queued. A file that cannot be loaded is left to the command to report.
pub fn init(
    log_format: &str,
    config: Option<&std::path::Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Telemetry>, TelemetryError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODEMODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let section = crate::config::Config::load(config)
        .map(|(c, _)| c.telemetry)
        .unwrap_or_default();
    let Some(settings) = TelemetrySettings::resolve(&section, env)? else {
        // Off: the subscriber is the log lines alone, and the runtime's spans are disabled.
        let logs = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr);
        match log_format {
            "json" => logs.json().flatten_event(true).init(),
            _ => logs.init(),
        }
        return Ok(None);
    };
    let telemetry = Telemetry::start(&settings)?;
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match log_format {
        "json" => logs.json().flatten_event(true).boxed(),
        _ => logs.boxed(),
    };
    tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(telemetry.layer())
        .init();
    let _ = CARRIER.set(telemetry.carrier());
    Ok(Some(telemetry))
}

/// Telemetry that cannot be started: what, and which setting to change.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A setting is wrong; the message names it.
    #[error("{0}")]
    Invalid(String),
    /// The exporter could not be built.
    #[error("cannot start the OTLP exporter: {0}")]
    Exporter(String),
}

/// The effective telemetry settings: the `[telemetry]` table under the `OTEL_*` variables.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP base URL.
    pub endpoint: String,
    /// The `service.name`.
    pub service_name: String,
    /// Whether call spans carry arguments.
    pub include_args: bool,
    /// The most spans waiting for export.
    pub max_queue: usize,
}

impl TelemetrySettings {
    /// Resolves the settings (`env` reads a variable); `None` when no endpoint is set,
    /// which leaves telemetry off. A bad variable is an error naming it.
    pub fn resolve(
        section: &TelemetrySection,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TelemetrySettings>, TelemetryError> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let endpoint = match set("OTEL_EXPORTER_OTLP_ENDPOINT") {
            Some(e) => {
                check_endpoint(&e).map_err(|m| {
                    TelemetryError::Invalid(format!("OTEL_EXPORTER_OTLP_ENDPOINT: {m}"))
                })?;
                e
            }
            None => match &section.endpoint {
                Some(e) => e.clone(),
                None => return Ok(None),
            },
        };
        let service_name = set("OTEL_SERVICE_NAME")
            .or_else(|| section.service_name.clone())
            .unwrap_or_else(|| "codemode".into());
        Ok(Some(TelemetrySettings {
            endpoint,
            service_name,
            include_args: section.include_args,
            max_queue: section.max_queue.unwrap_or(DEFAULT_MAX_QUEUE),
        }))
    }

    /// The URL spans are posted to: the base URL with `/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.endpoint.trim_end_matches('/'))
    }
}

/// Started telemetry: the tracer behind [`Telemetry::layer`]; dropping it sends what is
/// queued (waiting at most two seconds).
pub struct Telemetry {
    provider: SdkTracerProvider,
    include_args: bool,
}

impl Telemetry {
    /// Starts the exporter thread and the tracer.
    pub fn start(settings: &TelemetrySettings) -> Result<Telemetry, TelemetryError> {
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        // reqwest is built with rustls and no provider: ring, as the control API's client.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(format!("its HTTP client: {e}")))?;
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(settings.traces_url())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        exporter.set_resource(&resource);
        let queue = Queue::start(exporter, settings.max_queue)?;
        let provider = SdkTracerProvider::builder()
            .with_span_processor(queue)
            .with_resource(resource)
            .build();
        Ok(Telemetry {
            provider,
            include_args: settings.include_args,
        })
    }

    /// The layer that turns the runtime's spans (target [`TRACE_TARGET`], `info`) into
    /// OpenTelemetry spans; it sees no other span.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let tracer = self.provider.tracer("codemode");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_filter(Targets::new().with_target(TRACE_TARGET, LevelFilter::INFO))
    }

    /// The carrier a runtime keeps each execution's trace context with.
    pub fn carrier(&self) -> Arc<dyn TraceCarrier> {
        Arc::new(W3cCarrier {
            include_args: self.include_args,
        })
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let _ = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT);
    }
}

/// Keeps a span's context as a W3C `traceparent`.
struct W3cCarrier {
    include_args: bool,
}

impl TraceCarrier for W3cCarrier {
    fn save(&self, span: &Span) -> Option<String> {
        let mut fields = HashMap::new();
        TraceContextPropagator::new().inject_context(&span.context(), &mut fields);
        fields.remove("traceparent")
    }

    fn restore(&self, span: &Span, saved: &str) {
        adopt(span, saved);
    }

    fn include_args(&self) -> bool {
        self.include_args
    }
}

/// The context a W3C `traceparent` names, or `None` when the text is not one.
fn parse_traceparent(traceparent: &str) -> Option<Context> {
    let fields = HashMap::from([("traceparent".to_string(), traceparent.trim().to_string())]);
    let cx = TraceContextPropagator::new().extract(&fields);
    cx.span().span_context().is_valid().then_some(cx)
}

/// Makes `span` (not yet entered) a child of `traceparent`, linking the span it would
/// otherwise have had as parent; a malformed `traceparent` is ignored.
pub fn adopt(span: &Span, traceparent: &str) {
    let Some(cx) = parse_traceparent(traceparent) else {
        tracing::debug!(traceparent, "ignoring a malformed traceparent");
        return;
    };
    let current = Span::current().context().span().span_context().clone();
    if span.set_parent(cx).is_ok() && current.is_valid() {
        span.add_link(current);
    }
}

/// A request's span, a child of its `traceparent` when it carries a valid one.
pub fn request_span(name: &'static str, traceparent: Option<&str>) -> Span {
    let span =
        tracing::info_span!(target: TRACE_TARGET, "codemode.request", codemode.request = name);
    if let (false, Some(tp)) = (span.is_disabled(), traceparent) {
        adopt(&span, tp);
    }
    span
}

/// The span an HTTP request runs in, continuing its `traceparent` header; `None` while
/// telemetry is off (then nothing at all is made).
pub fn http_span(req: &Request) -> Option<Span> {
    let span = tracing::info_span!(
        target: TRACE_TARGET,
        "codemode.http",
        http.request.method = %req.method(),
        url.path = %req.uri().path(),
        http.response.status_code = tracing::field::Empty,
    );
    if span.is_disabled() {
        return None;
    }
    if let Some(tp) = req
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        adopt(&span, tp);
    }
    Some(span)
}

/// What the exporter thread receives.
enum Message {
    Span(Box<SpanData>),
    /// Send everything queued, then answer.
    Flush(std::sync::mpsc::Sender<()>),
}

/// The span processor: a bounded queue drained by one thread, in batches.
#[derive(Debug)]
struct Queue {
    sender: Mutex<Option<SyncSender<Message>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Queue {
    fn start(
        exporter: opentelemetry_otlp::SpanExporter,
        max_queue: usize,
    ) -> Result<Queue, TelemetryError> {
        let (sender, receiver) = std::sync::mpsc::sync_channel(max_queue.max(1));
        let thread = std::thread::Builder::new()
            .name("codemode-otlp".into())
            .spawn(move || drain(exporter, receiver))
            .map_err(|e| TelemetryError::Exporter(format!("cannot start its thread: {e}")))?;
        Ok(Queue {
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
        })
    }

    fn sender(&self) -> Option<SyncSender<Message>> {
        self.sender
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Asks the thread to send what is queued and waits for it, at most `limit`.
    fn flush(&self, limit: Duration) -> OTelSdkResult {
        let Some(sender) = self.sender() else {
            return Err(OTelSdkError::AlreadyShutdown);
        };
        let (done, wait) = std::sync::mpsc::channel();
        let deadline = Instant::now() + limit;
        let mut message = Message::Flush(done);
        loop {
            match sender.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if Instant::now() < deadline => {
                    message = m;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return Err(OTelSdkError::Timeout(limit)),
            }
        }
        wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| OTelSdkError::Timeout(limit))
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let sent = match self.sender() {
            Some(sender) => sender.try_send(Message::Span(Box::new(span))).is_ok(),
            None => false,
        };
        if !sent {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.flush(SHUTDOWN_WAIT)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let flushed = self.flush(timeout);
        // Closing the queue ends the thread once it is idle; it is not waited for longer.
        self.sender.lock().unwrap_or_else(|e| e.into_inner()).take();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if flushed.is_ok() {
            if let Some(thread) = thread {
                let _ = thread.join();
            }
        }
        flushed
    }
}

/// The exporter thread: batches of up to [`BATCH`] spans, each sent once it is full or its
/// oldest span waited [`BATCH_DELAY`]; a failed batch counts as dropped.
fn drain(exporter: opentelemetry_otlp::SpanExporter, receiver: Receiver<Message>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        // Without a runtime nothing can be sent: every span is dropped and counted.
        for message in receiver {
            if let Message::Span(_) = message {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        return;
    };
    let send = |batch: &mut Vec<SpanData>| {
        if batch.is_empty() {
            return;
        }
        let spans = std::mem::take(batch);
        let n = spans.len() as u64;
        let result = runtime
            .block_on(async { tokio::time::timeout(EXPORT_TIMEOUT, exporter.export(spans)).await });
        match result {
            Ok(Ok(())) => EXPORTED.fetch_add(n, Ordering::Relaxed),
            _ => DROPPED.fetch_add(n, Ordering::Relaxed),
        };
    };
    let mut batch: Vec<SpanData> = Vec::with_capacity(BATCH);
    let mut oldest: Option<Instant> = None;
    loop {
        let wait = oldest.map_or(Duration::from_secs(3600), |t| {
            BATCH_DELAY.saturating_sub(t.elapsed())
        });
        match receiver.recv_timeout(wait) {
            Ok(Message::Span(span)) => {
                batch.push(*span);
                oldest.get_or_insert_with(Instant::now);
                if batch.len() >= BATCH {
                    send(&mut batch);
                    oldest = None;
                }
            }
            Ok(Message::Flush(done)) => {
                send(&mut batch);
                oldest = None;
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                send(&mut batch);
                oldest = None;
            }
            Err(RecvTimeoutError::Disconnected) => {
                send(&mut batch);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_traceparent_names_no_context() {
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad:?}");
        }
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(parse_traceparent(good).is_some());
    }

    #[test]
    fn the_environment_wins_over_the_file_and_no_endpoint_is_off() {
        let section = TelemetrySection {
            endpoint: Some("http://file:4318".into()),
            ..TelemetrySection::default()
        };
        let none = |_: &str| None;
        let from_file = TelemetrySettings::resolve(&section, none).unwrap().unwrap();
        assert_eq!(from_file.traces_url(), "http://file:4318/v1/traces");
        assert_eq!(from_file.service_name, "codemode");
        let env = |k: &str| match k {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://env:4318/".to_string()),
            "OTEL_SERVICE_NAME" => Some("agent".to_string()),
            _ => None,
        };
        let from_env = TelemetrySettings::resolve(&section, env).unwrap().unwrap();
        assert_eq!(from_env.traces_url(), "http://env:4318/v1/traces");
        assert_eq!(from_env.service_name, "agent");
        let off = TelemetrySettings::resolve(&TelemetrySection::default(), none).unwrap();
        assert!(off.is_none());
        let bad = |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "collector".to_string());
        let err = TelemetrySettings::resolve(&section, bad).unwrap_err();
        assert!(
            err.to_string().contains("OTEL_EXPORTER_OTLP_ENDPOINT"),
            "{err}"
        );
    }
}
