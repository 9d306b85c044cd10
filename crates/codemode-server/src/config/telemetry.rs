//! `[telemetry]`: OpenTelemetry traces exported over OTLP/HTTP (protobuf).

use serde::Deserialize;

/// The most spans waiting for export by default; past it new spans are dropped and counted.
pub const DEFAULT_MAX_QUEUE: usize = 2048;

/// `[telemetry]`: where traces go. Off unless an endpoint is set here or in
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (the environment wins over the file, as flags do).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// The OTLP/HTTP base URL (`http://collector:4318`); spans are posted to `/v1/traces`.
    pub endpoint: Option<String>,
    /// The `service.name` of the spans (default `codemode`; `OTEL_SERVICE_NAME` wins).
    pub service_name: Option<String>,
    /// Whether connector call spans carry the call's arguments (default false: never).
    #[serde(default)]
    pub include_args: bool,
    /// The most spans waiting for export (default 2,048); past it spans are dropped, counted
    /// in `/metrics`, and the run goes on.
    pub max_queue: Option<usize>,
}

impl TelemetrySection {
    /// Refuses an endpoint that is not an http(s) URL and a queue of 0, naming the key.
    pub fn check(&self) -> Result<(), String> {
        if let Some(endpoint) = &self.endpoint {
            check_endpoint(endpoint).map_err(|e| format!("field `telemetry.endpoint`: {e}"))?;
        }
        if self.max_queue == Some(0) {
            return Err("`telemetry.max_queue = 0` would drop every span; use at least 1, or leave it out for the default (2048)".into());
        }
        if self
            .service_name
            .as_deref()
            .is_some_and(|s| s.trim().is_empty())
        {
            return Err(
                "field `telemetry.service_name` is empty; leave it out for `codemode`".into(),
            );
        }
        Ok(())
    }
}

/// Checks an OTLP endpoint: `http://` or `https://` and a host.
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .ok_or_else(|| {
            format!("{endpoint:?} is not an http:// or https:// URL (like http://127.0.0.1:4318)")
        })?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!(
            "{endpoint:?} names no host (like http://127.0.0.1:4318)"
        ));
    }
    Ok(())
}
