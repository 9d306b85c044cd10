//! OpenTelemetry traces: the runtime's `tracing` spans (target [`TRACE_TARGET`]) exported
//! over OTLP/HTTP protobuf, the W3C `traceparent` of incoming HTTP and MCP requests as their
//! parent, and the [`TraceCarrier`] that keeps an execution's first pass context for the
//! passes after a pause.
//!
//! Export never holds a run up: finished spans go to the SDK's batch span processor, whose
//! thread sends them in batches; at most `max_queue` spans wait, and past that a span is
//! dropped and counted ([`dropped_spans`], in `/metrics`), as is a batch the collector did
//! not take.
//!
//! Nothing here is process-wide unless the host asks: [`init`] (for a program's `main`)
//! installs the global `tracing` subscriber; [`Telemetry::start`] alone only builds a tracer
//! and its exporter, whose HTTP client carries its own TLS settings.

use crate::config::{check_endpoint, TelemetrySection, DEFAULT_MAX_QUEUE};
use axum::extract::Request;
use codemode::{TraceCarrier, TRACE_TARGET};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::Context;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
    SpanProcessor,
};
use opentelemetry_sdk::Resource;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
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

/// Installs the process's `tracing` subscriber (host policy: for a program's `main`; a
/// library embedding the server composes [`Telemetry::layer`] into its own): log lines on stderr (levels from
/// `CODEMODE_LOG`, default `warn`; `log_format` `text` or `json`) and, when an OTLP endpoint
/// is set (`[telemetry]` of the `config` file, or `OTEL_EXPORTER_OTLP_ENDPOINT`), the
/// OpenTelemetry layer. Keep what it returns until the process ends: dropping it sends the
/// spans still queued. The file's connector tables are read with `kinds` (the program's, so
/// that a kind of its own does not make the file unreadable here); a file that cannot be
/// loaded is left to the command to report.
pub fn init(
    log_format: &str,
    config: Option<&std::path::Path>,
    kinds: &codemode::kind::ConnectorKinds,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Telemetry>, TelemetryError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODEMODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let section = crate::config::Config::load_with(config, kinds)
        .map(|(c, _)| c.telemetry)
        .unwrap_or_default();
    let Some(settings) = TelemetrySettings::resolve(&section, env)? else {
        // Off: the subscriber is the log lines alone, and the runtime's spans are disabled.
        let logs = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr);
        let installed = match log_format {
            "json" => logs.json().flatten_event(true).try_init(),
            _ => logs.try_init(),
        };
        installed.map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
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
        .try_init()
        .map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
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
    /// The process already has a global `tracing` subscriber.
    #[error("cannot install the log subscriber: {0}; install only one")]
    Subscriber(String),
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
    /// Starts the batch span processor (its thread) and the tracer; installs nothing
    /// process-wide.
    pub fn start(settings: &TelemetrySettings) -> Result<Telemetry, TelemetryError> {
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let client = codemode_tls::http_client_builder()
            .map_err(|e| TelemetryError::Exporter(format!("its TLS settings: {e}")))?
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(format!("its HTTP client: {e}")))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(settings.traces_url())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let max_queue = settings.max_queue.max(1);
        let waiting = Arc::new(AtomicUsize::new(0));
        let exporter = CountingExporter {
            inner: exporter,
            waiting: waiting.clone(),
            runtime: OnceLock::new(),
        };
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(max_queue)
            .with_max_export_batch_size(BATCH)
            .with_scheduled_delay(BATCH_DELAY)
            .build();
        let batch = BatchSpanProcessor::builder(exporter)
            .with_batch_config(config)
            .build();
        let processor = Bounded {
            inner: batch,
            waiting,
            max_queue,
        };
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
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

/// The SDK's batch span processor behind a count of the spans it holds: a span that would
/// make more than `max_queue` wait is dropped and counted here, so the SDK's own queue (of the
/// same size) is never full and every drop is counted.
#[derive(Debug)]
struct Bounded {
    inner: BatchSpanProcessor,
    /// Spans handed to `inner` and not yet to the exporter.
    waiting: Arc<AtomicUsize>,
    max_queue: usize,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let admitted = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_queue).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            self.inner.on_end(span);
        } else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter as the batch processor's thread calls it: each batch sent on a tokio
/// runtime of that thread's own (reqwest needs one), within [`EXPORT_TIMEOUT`], and counted as
/// exported or dropped.
#[derive(Debug)]
struct CountingExporter {
    inner: opentelemetry_otlp::SpanExporter,
    /// Shared with [`Bounded`]: a batch stops waiting once it reaches the exporter.
    waiting: Arc<AtomicUsize>,
    /// Made at the first export, on the processor's thread (which also drops it).
    runtime: OnceLock<Option<tokio::runtime::Runtime>>,
}

impl CountingExporter {
    /// Sends `batch` and waits for the answer; called on the processor's thread only.
    fn send(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let runtime = self.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()
        });
        let Some(runtime) = runtime else {
            return Err(OTelSdkError::InternalFailure(
                "cannot start the exporter's async runtime".into(),
            ));
        };
        runtime
            .block_on(async {
                tokio::time::timeout(EXPORT_TIMEOUT, self.inner.export(batch)).await
            })
            .unwrap_or(Err(OTelSdkError::Timeout(EXPORT_TIMEOUT)))
    }
}

impl SpanExporter for CountingExporter {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let n = batch.len();
        let _ = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some(w.saturating_sub(n))
            });
        let result = self.send(batch);
        let counter = if result.is_ok() { &EXPORTED } else { &DROPPED };
        counter.fetch_add(n as u64, Ordering::Relaxed);
        std::future::ready(result)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
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
