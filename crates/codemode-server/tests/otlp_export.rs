//! The OTLP exporter behind the SDK's batch span processor, against a real OTLP/HTTP receiver
//! on loopback: every span reaches it and is counted as exported; with a collector that never
//! answers, spans past the queue's bound are dropped and counted at once, and making them
//! never waits on the collector. (One test: the counters are the process's.)

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::post;
use codemode_server::telemetry::{self, Telemetry, TelemetrySettings};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;

/// Makes `n` runtime spans through `telemetry`'s layer, then drops it (which sends what is
/// queued, waiting at most two seconds); how long making the spans took.
async fn spans_through(telemetry: Telemetry, n: usize) -> Duration {
    tokio::task::spawn_blocking(move || {
        let subscriber = tracing_subscriber::registry().with(telemetry.layer());
        let started = Instant::now();
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..n {
                tracing::info_span!(target: codemode::TRACE_TARGET, "codemode.test", i)
                    .in_scope(|| {});
            }
        });
        let took = started.elapsed();
        drop(telemetry);
        took
    })
    .await
    .unwrap()
}

fn settings(endpoint: String, max_queue: usize) -> TelemetrySettings {
    TelemetrySettings {
        endpoint,
        service_name: "otlp-test".into(),
        include_args: false,
        max_queue,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_and_drops_past_the_bound_are_counted() {
    // A receiver: `POST /v1/traces`, protobuf bodies.
    let bodies: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let sink = bodies.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |headers: HeaderMap, body: Bytes| {
            let sink = sink.clone();
            async move {
                let kind = headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                sink.lock().unwrap().push((kind, body.len()));
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let (exported, dropped) = (telemetry::exported_spans(), telemetry::dropped_spans());
    let started = Telemetry::start(&settings(base, 2048)).unwrap();
    spans_through(started, 20).await;
    assert_eq!(telemetry::exported_spans() - exported, 20);
    assert_eq!(telemetry::dropped_spans() - dropped, 0);
    let bodies = bodies.lock().unwrap().clone();
    assert!(!bodies.is_empty());
    for (kind, len) in &bodies {
        assert_eq!(kind, "application/x-protobuf");
        assert!(*len > 0);
    }

    // A collector that accepts connections and never answers; a queue of 4.
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = blackhole.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in blackhole.incoming().take(16) {
            open.push(stream);
        }
    });
    let dropped = telemetry::dropped_spans();
    let started = Telemetry::start(&settings(format!("http://127.0.0.1:{port}"), 4)).unwrap();
    let took = spans_through(started, 100).await;
    assert!(
        took < Duration::from_secs(1),
        "making the spans took {took:?}"
    );
    // At most the queue (4) and one batch being sent (4) escaped the count.
    let now = telemetry::dropped_spans() - dropped;
    assert!(now >= 92, "{now} spans counted as dropped");
}
