//! The crate's HTTP clients (the control API's, the OTLP exporter's) carry their own TLS
//! settings: used against an `https://` server, in a process where no rustls provider is
//! installed, they try a real handshake, fail with an error or a dropped span (not a panic)
//! and leave the process-wide provider unset. (Its own test binary: no other test may install
//! a provider in this process.)

use codemode_server::control::{Control, ControlError};
use codemode_server::telemetry::{self, Telemetry, TelemetrySettings};
use codemode_server::Client;
use codemode_testkit::tls::{process_provider_installed, PlainTextServer};
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_clients_need_no_process_wide_provider() {
    assert!(!process_provider_installed());

    // The control API's client.
    let server = PlainTextServer::start().await.unwrap();
    let client = Client::new(&server.https_url(), None).unwrap();
    let err = client.pending().await.unwrap_err();
    assert!(matches!(err, ControlError::Unreachable { .. }), "{err}");
    assert!(server.saw_handshake(), "no TLS handshake: {err}");
    assert!(!process_provider_installed());

    // The OTLP exporter's client: the span it could not send is counted as dropped.
    let server = PlainTextServer::start().await.unwrap();
    let settings = TelemetrySettings {
        endpoint: server.https_url(),
        service_name: "test".into(),
        include_args: false,
        max_queue: 16,
    };
    let dropped = telemetry::dropped_spans();
    let started = Telemetry::start(&settings).unwrap();
    let subscriber = tracing_subscriber::registry().with(started.layer());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!(target: codemode::TRACE_TARGET, "codemode.test").in_scope(|| {});
    });
    // Dropping it sends what is queued, waiting for the answer.
    tokio::task::spawn_blocking(move || drop(started))
        .await
        .unwrap();
    assert!(server.saw_handshake(), "no TLS handshake from the exporter");
    assert_eq!(telemetry::dropped_spans(), dropped + 1);
    assert_eq!(telemetry::exported_spans(), 0);
    assert!(
        !process_provider_installed(),
        "a client installed a process-wide provider"
    );
}
