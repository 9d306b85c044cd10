//! The crate's HTTP clients (the control API's, the OTLP exporter's) carry their own TLS
//! settings: used against an `https://` server, in a process where no rustls provider is
//! installed, they try a real handshake, fail with an error or a dropped span (not a panic)
//! and leave the process-wide provider unset. (Its own test binary: no other test may install
//! a provider in this process.)

use codemode_server::control::{Control, ControlError};
use codemode_server::telemetry::{self, Telemetry, TelemetrySettings};
use codemode_server::Client;
use rustls::crypto::CryptoProvider;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing_subscriber::layer::SubscriberExt;

/// A loopback server that answers TLS with plain text: a client's handshake fails there. Its
/// port, and whether a TLS handshake (a record starting with byte 0x16) reached it.
async fn plain_text_server() -> (u16, Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hello = Arc::new(AtomicBool::new(false));
    let seen = hello.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut first = [0u8; 1];
                if socket.read_exact(&mut first).await.is_ok() && first[0] == 0x16 {
                    seen.store(true, Ordering::SeqCst);
                }
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (port, hello)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_clients_need_no_process_wide_provider() {
    assert!(CryptoProvider::get_default().is_none());

    // The control API's client.
    let (port, hello) = plain_text_server().await;
    let client = Client::new(&format!("https://127.0.0.1:{port}"), None).unwrap();
    let err = client.pending().await.unwrap_err();
    assert!(matches!(err, ControlError::Unreachable { .. }), "{err}");
    assert!(hello.load(Ordering::SeqCst), "no TLS handshake: {err}");
    assert!(CryptoProvider::get_default().is_none());

    // The OTLP exporter's client: the span it could not send is counted as dropped.
    let (port, hello) = plain_text_server().await;
    let settings = TelemetrySettings {
        endpoint: format!("https://127.0.0.1:{port}"),
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
    assert!(
        hello.load(Ordering::SeqCst),
        "no TLS handshake from the exporter"
    );
    assert_eq!(telemetry::dropped_spans(), dropped + 1);
    assert_eq!(telemetry::exported_spans(), 0);
    assert!(
        CryptoProvider::get_default().is_none(),
        "a client installed a process-wide provider"
    );
}
