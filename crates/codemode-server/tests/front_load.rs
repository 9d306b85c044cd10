//! The server always answers its short requests: on real loopback sockets, event streams
//! past their caps and 1,000 idle connections leave `/healthz`, a listing and a trivial run
//! fast; idle sockets are closed after the idle timeout; a flood of runs gets quick 503s
//! beyond the admission limits while `/healthz` stays fast; a right token is admitted after
//! another client's (and its own address's) wrong guesses. Figures print with `--nocapture`.

use codemode::{Runtime, RustConnector, RustTool};
use codemode_server::admission::AdmissionOptions;
use codemode_server::auth::Tokens;
use codemode_server::events::StreamLimits;
use codemode_server::listen::{self, ListenOptions};
use codemode_server::{router, ServerOptions};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.replace(['_', ','], "").parse().ok())
        .unwrap_or(default)
}

fn runtime(dir: &std::path::Path) -> Arc<Runtime> {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let rt = Runtime::builder(store, executor)
        .connector(
            RustConnector::new("slow").tool(
                RustTool::new("wait", |_args, _ctx| async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok(json!(1))
                })
                .read_only(),
            ),
        )
        .build()
        .unwrap();
    Arc::new(rt)
}

/// Serves `options` on a free loopback port; the address.
async fn start(rt: Arc<Runtime>, options: ServerOptions, listen: ListenOptions) -> SocketAddr {
    let listener = listen::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(rt, options);
    tokio::spawn(listen::serve(listener, app, listen, std::future::pending()));
    addr
}

/// A connection to `addr` from the loopback address `from`.
async fn connect_from(addr: SocketAddr, from: [u8; 4]) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(addr).await.unwrap()
}

/// One request on its own connection: the status, the head and the body, and how long the
/// answer took. A connection closed with no answer is status 0.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String, Duration) {
    let started = Instant::now();
    let mut s = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => return (0, format!("connect: {e}"), started.elapsed()),
    };
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if let Err(e) = s.write_all(head.as_bytes()).await {
        return (0, format!("write: {e}"), started.elapsed());
    }
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out)).await;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out).to_string();
    match read {
        Err(_) => return (0, format!("timed out: {text}"), took),
        Ok(Err(e)) if out.is_empty() => return (0, format!("read: {e}"), took),
        _ => {}
    }
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text, took)
}

/// Opens an event stream from `from`: its status, and the connection (kept open).
async fn open_stream(addr: SocketAddr, from: [u8; 4]) -> (u16, String, TcpStream) {
    let mut s = connect_from(addr, from).await;
    let head = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text, s)
}

fn quantiles(mut times: Vec<Duration>) -> (Duration, Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    (at(0.5), at(0.99), *times.last().unwrap())
}

/// Whether the server closed `s` (EOF or reset) within `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// `/healthz`, a listing and a trivial run, `n` rounds: every answer 200; the latencies.
async fn short_requests(addr: SocketAddr, n: usize) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..n {
        for (method, path, body) in [
            ("GET", "/healthz", ""),
            ("GET", "/api/executions?limit=5", ""),
            ("POST", "/api/run", r#"{"code":"return 1 + 1"}"#),
        ] {
            let (status, text, took) = request(addr, method, path, None, body).await;
            assert_eq!(status, 200, "{method} {path}: {text}");
            times.push(took);
        }
    }
    times
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_past_their_caps_and_idle_sockets_leave_short_requests_fast() {
    let dir = tempfile::tempdir().unwrap();
    let streams = StreamLimits {
        max_streams: 40,
        max_per_client: 4,
    };
    let listen_options = ListenOptions {
        max_connections: 128,
        reserve: 16,
        idle_timeout: Duration::from_secs(2),
        ..ListenOptions::default()
    };
    let options = ServerOptions {
        streams,
        ..ServerOptions::default()
    };
    let addr = start(runtime(dir.path()), options, listen_options).await;

    // One client: its fifth stream is refused with 429 and Retry-After.
    let mut mine = Vec::new();
    for _ in 0..4 {
        let (status, head, s) = open_stream(addr, [127, 0, 2, 1]).await;
        assert_eq!(status, 200, "{head}");
        mine.push(s);
    }
    let (status, text, _) = open_stream(addr, [127, 0, 2, 1]).await;
    assert_eq!(status, 429, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 5"),
        "{text}"
    );
    assert!(text.contains("max_event_streams_per_client"), "{text}");
    drop(mine);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Many clients: past the global cap, 503 with Retry-After.
    let mut open = Vec::new();
    let mut refused = 0;
    for i in 0..60u8 {
        let (status, text, s) = open_stream(addr, [127, 0, 3, 1 + i / 4]).await;
        match status {
            200 => open.push(s),
            503 => {
                assert!(text.to_ascii_lowercase().contains("retry-after"), "{text}");
                assert!(text.contains("limits.max_event_streams"), "{text}");
                refused += 1;
            }
            other => panic!("stream {i}: {other} {text}"),
        }
    }
    assert_eq!((open.len(), refused), (40, 20));

    // 1,000 idle sockets that send nothing.
    let idle_count = count("CODEMODE_FRONT_IDLE", 1_000);
    let mut idle = Vec::new();
    for i in 0..idle_count {
        let from = [127, 0, 4 + (i / 250) as u8, 1 + (i % 250) as u8];
        idle.push(connect_from(addr, from).await);
    }
    // Let them age past the grace a new connection gets to send its first request.
    tokio::time::sleep(listen::EVICTABLE_AFTER + Duration::from_millis(100)).await;
    let times = short_requests(addr, 20).await;
    let (p50, p99, max) = quantiles(times);
    println!(
        "with {} event streams and {idle_count} idle sockets: /healthz, listing, run p50 {p50:?} p99 {p99:?} max {max:?}",
        open.len()
    );
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}");

    // The event streams still stream; idle sockets are closed after the idle timeout.
    let (status, text, _) = request(addr, "GET", "/healthz", None, "").await;
    assert_eq!(status, 200, "{text}");
    let started = Instant::now();
    let mut still_open = 0;
    for s in idle.iter_mut() {
        if !closed_within(s, Duration::from_secs(4)).await {
            still_open += 1;
        }
    }
    println!(
        "idle sockets all closed {:?} after the short requests",
        started.elapsed()
    );
    assert_eq!(
        still_open, 0,
        "idle sockets left open past the idle timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_runs_gets_quick_refusals_and_health_stays_fast() {
    let n = count("CODEMODE_FRONT_FLOOD", 2_000);
    let dir = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        admission: AdmissionOptions {
            max_running: 16,
            max_queued: 32,
        },
        ..ServerOptions::default()
    };
    let addr = start(runtime(dir.path()), options, ListenOptions::default()).await;
    let code = r#"{"code":"return await slow.wait({})"}"#;
    let started = Instant::now();
    let flood: Vec<_> = (0..n)
        .map(|_| tokio::spawn(async move { request(addr, "POST", "/api/run", None, code).await }))
        .collect();
    // Meanwhile /healthz answers fast.
    let mut health = Vec::new();
    for _ in 0..20 {
        let (status, text, took) = request(addr, "GET", "/healthz", None, "").await;
        assert_eq!(status, 200, "{text}");
        health.push(took);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (mut ran, mut busy, mut closed) = (0, 0, 0);
    let mut refusals = Vec::new();
    for f in flood {
        let (status, text, took) = f.await.unwrap();
        match status {
            200 => ran += 1,
            503 => {
                assert!(
                    text.to_ascii_lowercase().contains("retry-after: 1"),
                    "{text}"
                );
                busy += 1;
                refusals.push(took);
            }
            0 => {
                if closed < 5 {
                    println!("closed unanswered after {took:?}: {text}");
                }
                closed += 1
            }
            other => panic!("{other}: {text}"),
        }
    }
    let (h50, h99, _) = quantiles(health);
    let (r50, r99, _) = quantiles(refusals);
    println!(
        "{n} runs at once in {:?}: {ran} ran, {busy} refused with 503 (p50 {r50:?} p99 {r99:?}), {closed} closed unanswered; /healthz p50 {h50:?} p99 {h99:?}",
        started.elapsed()
    );
    assert!(ran >= 16, "{ran} ran");
    assert!(busy > 0, "nothing was refused");
    assert_eq!(closed, 0, "connections closed with no answer");
    assert!(h99 < Duration::from_secs(2), "/healthz p99 {h99:?}");
    assert!(r50 < Duration::from_secs(3), "refusals p50 {r50:?}");
    // Let the admitted runs end before the runtime goes away.
    tokio::time::sleep(Duration::from_secs(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_right_token_is_admitted_after_wrong_guesses_from_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        tokens: Tokens::single("the-right-token-value"),
        ..ServerOptions::default()
    };
    let addr = start(runtime(dir.path()), options, ListenOptions::default()).await;
    for _ in 0..10 {
        let (status, ..) = request(addr, "GET", "/api/pending", Some("wrong"), "").await;
        assert_eq!(status, 401);
    }
    let (status, text, _) = request(addr, "GET", "/api/pending", Some("wrong"), "").await;
    assert_eq!(status, 429, "{text}");
    assert!(text.to_ascii_lowercase().contains("retry-after:"), "{text}");
    let right = Some("the-right-token-value");
    let (status, text, _) = request(addr, "GET", "/api/pending", right, "").await;
    assert_eq!(status, 200, "{text}");
}
