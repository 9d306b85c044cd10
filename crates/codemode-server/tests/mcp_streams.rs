//! `GET /mcp` streams count against the event-stream limits with `/api/events`: on real
//! loopback sockets, one client's streams past `limits.max_event_streams_per_client` (MCP or
//! not) are refused with 429 and `Retry-After`, every client's past
//! `limits.max_event_streams` with 503, and `/healthz` still answers.

use codemode::Runtime;
use codemode_server::events::StreamLimits;
use codemode_server::listen::{self, ListenOptions};
use codemode_server::{router, ServerOptions};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Serves `options` on a free loopback port; the address.
async fn start(dir: &std::path::Path, options: ServerOptions) -> SocketAddr {
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let rt = Arc::new(Runtime::builder(store, executor).build().unwrap());
    let listener = listen::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(rt, options);
    let listen = ListenOptions::default();
    tokio::spawn(listen::serve(listener, app, listen, std::future::pending()));
    addr
}

/// Sends `head` (and `body`) from the loopback address `from`; the status, what was read up
/// to the end of the answer's head (or of a short answer), and the connection, kept open.
async fn send(addr: SocketAddr, from: [u8; 4], head: &str, body: &str) -> (u16, String, TcpStream) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    let mut s = socket.connect(addr).await.unwrap();
    let request = format!(
        "{head}Host: {addr}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    // A short answer's body follows its head: read what is already there.
    if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text, s)
}

/// A new MCP session, initialised, from `from`: its id.
async fn session(addr: SocketAddr, from: [u8; 4]) -> String {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"streams-test","version":"1"}}}"#;
    let post = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
    let (status, text, _) = send(addr, from, post, init).await;
    assert_eq!(status, 200, "{text}");
    let id = text
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id: {text}"));
    let done = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let head = format!("{post}Mcp-Session-Id: {id}\r\n");
    let (status, text, _) = send(addr, from, &head, done).await;
    assert_eq!(status, 202, "{text}");
    id
}

/// Opens `GET /mcp` on session `id` from `from`.
async fn mcp_stream(addr: SocketAddr, from: [u8; 4], id: &str) -> (u16, String, TcpStream) {
    let head =
        format!("GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n");
    send(addr, from, &head, "").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_event_streams_count_against_the_stream_limits() {
    let dir = tempfile::tempdir().unwrap();
    let per_client = StreamLimits::default().max_per_client;
    let options = ServerOptions {
        streams: StreamLimits {
            max_streams: per_client + 4,
            max_per_client: per_client,
        },
        ..ServerOptions::default()
    };
    let addr = start(dir.path(), options).await;
    let me = [127, 0, 6, 1];
    let id = session(addr, me).await;

    // One client: its streams up to the cap are served, the next is refused.
    let mut open = Vec::new();
    for i in 0..per_client {
        let (status, text, s) = mcp_stream(addr, me, &id).await;
        assert_eq!(status, 200, "stream {i}: {text}");
        assert!(
            text.to_ascii_lowercase().contains("text/event-stream"),
            "{text}"
        );
        open.push(s);
    }
    let (status, text, _) = mcp_stream(addr, me, &id).await;
    assert_eq!(status, 429, "{text}");
    let lower = text.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 5"), "{text}");
    assert!(text.contains("max_event_streams_per_client"), "{text}");
    // The caps are shared: the API's event stream is refused to this client too.
    let (status, text, _) = send(addr, me, "GET /api/events HTTP/1.1\r\n", "").await;
    assert_eq!(status, 429, "{text}");
    // A POST to the same session is no stream, and is served.
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let post = format!("POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {id}\r\n");
    let (status, text, _) = send(addr, me, &post, ping).await;
    assert_eq!(status, 200, "{text}");

    // Every client together: past the global cap, 503 with Retry-After.
    let other = [127, 0, 6, 2];
    let theirs = session(addr, other).await;
    for i in 0..4 {
        let (status, text, s) = mcp_stream(addr, other, &theirs).await;
        assert_eq!(status, 200, "stream {i} of another client: {text}");
        open.push(s);
    }
    let (status, text, _) = mcp_stream(addr, other, &theirs).await;
    assert_eq!(status, 503, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 5"),
        "{text}"
    );
    assert!(text.contains("limits.max_event_streams"), "{text}");

    let (status, text, _) = send(addr, [127, 0, 6, 3], "GET /healthz HTTP/1.1\r\n", "").await;
    assert_eq!(status, 200, "/healthz with every stream taken: {text}");
    drop(open);
}
