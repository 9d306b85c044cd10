//! Accepting connections: a listen backlog of 1,024, a cap on open connections, idle and
//! header timeouts, and slots kept for short requests.
//!
//! - A connection with no request in flight is *idle*; one idle for `idle_timeout` is closed
//!   (hyper's `header_timeout` also bounds how long a request's headers may take).
//! - When `max_connections` are open, a new connection makes room by closing the one idle
//!   longest (`slots`), so idle sockets can never keep a client out; only when every open
//!   connection has a request in flight is the new one refused (a JSON 503, `Retry-After`).
//! - Past `max_connections`, `reserve` more connections are accepted for short requests
//!   only: a stream (an event stream, `GET /mcp`) asked for on one is refused with 503, so
//!   `/healthz`, listings and approvals are still served when streams fill the rest.
//! - Past those, up to 4,096 more connections are served one request each: `/healthz` is
//!   answered, anything else gets a JSON 503 with `Retry-After`.
//! - A client that takes nothing the server writes for `header_timeout` is closed (`stall`).

mod slots;
mod stall;

use axum::extract::connect_info::ConnectInfo;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::IntoResponse;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;
use tower_service::Service;

pub use slots::EVICTABLE_AFTER;

/// The listen backlog: connections the kernel queues before they are accepted.
pub const BACKLOG: u32 = 1024;
/// Default time to send a request's headers.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a connection may sit with no request in flight.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(15);
/// Default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default connections past the cap kept for short requests.
pub const DEFAULT_RESERVE: usize = 64;
/// Connections past every slot served at once (`/healthz` only), at most.
const MAX_REFUSING: usize = 4096;
/// Time a connection past every slot has to send its request, and to take the answer.
const OVERFLOW_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a connection told to close for room is still read first: a request that
/// arrived just then is served instead of cut off.
const EVICTION_SETTLE: Duration = Duration::from_millis(20);
/// Seconds a refused client is told to wait.
const RETRY_AFTER_SECONDS: u64 = 1;

/// How connections are accepted and kept.
#[derive(Debug, Clone, Copy)]
pub struct ListenOptions {
    /// Time to send a request's headers, and to take nothing of what the server writes.
    pub header_timeout: Duration,
    /// Time a connection may sit with no request in flight (before its first request, or
    /// between two) before it is closed.
    pub idle_timeout: Duration,
    /// Open connections served at once (idle ones are closed to make room past it).
    pub max_connections: usize,
    /// Connections past `max_connections` accepted for short requests only (no streams).
    pub reserve: usize,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            reserve: DEFAULT_RESERVE,
        }
    }
}

/// Whether a request asks for a stream that holds its connection for long: an event stream,
/// or the MCP endpoint's server-sent events.
pub fn is_stream(method: &Method, path: &str) -> bool {
    method == Method::GET && (path.ends_with("/events") || path.trim_end_matches('/') == "/mcp")
}

/// Binds `addr` with a listen backlog of [`BACKLOG`].
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves `router` on `listener` until `shutdown` resolves; then stops accepting, lets every
/// connection finish its in-flight request, and returns when all are closed. Each request
/// carries its peer's address as [`ConnectInfo`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: ListenOptions,
    shutdown: impl Future<Output = ()>,
) {
    let max = options.max_connections.max(1);
    let main = Arc::new(slots::Slots::default());
    let reserve = Arc::new(slots::Slots::default());
    let closing = CancellationToken::new();
    let refusing = Arc::new(AtomicUsize::new(0));
    let tasks = tokio_util::task::TaskTracker::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: give the others a moment.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let (slot, short_only) = match main.take(max) {
            Some(slot) => (slot, false),
            None => match reserve.take(options.reserve) {
                Some(slot) => (slot, true),
                None => {
                    // Overflow connections are bounded too; past that, closed unanswered.
                    if refusing.load(Ordering::SeqCst) < MAX_REFUSING {
                        refusing.fetch_add(1, Ordering::SeqCst);
                        let refusing = refusing.clone();
                        let router = router.clone();
                        tokio::spawn(async move {
                            overflow(stream, peer, router, max).await;
                            refusing.fetch_sub(1, Ordering::SeqCst);
                        });
                    } else {
                        tracing::warn!(%peer, limit = max, "closed a connection unanswered: every open connection has a request in flight (limits.max_connections)");
                    }
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let slot = Arc::new(slot);
        let in_service = slot.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let in_flight = in_service.request();
            let mut req = req.map(axum::body::Body::new);
            req.extensions_mut().insert(ConnectInfo(peer));
            let refused = short_only && is_stream(req.method(), req.uri().path());
            let call = (!refused).then(|| router.clone().call(req));
            async move {
                let response = match call {
                    Some(call) => call.await?,
                    None => reserved_refusal(max),
                };
                Ok::<_, std::convert::Infallible>(response.map(|inner| {
                    axum::body::Body::new(slots::Tracked {
                        inner,
                        _in_flight: in_flight,
                    })
                }))
            }
        });
        let stream =
            stall::WriteStall::new(stream, options.header_timeout, Some(slot.conn().clone()));
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let closing = closing.clone();
        let idle_timeout = options.idle_timeout;
        tasks.spawn(async move {
            tokio::pin!(conn);
            let tick = (idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
            let mut ticks = tokio::time::interval(tick);
            let mut ending = false;
            let mut evicting: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
            loop {
                tokio::select! {
                    // The connection first: bytes that arrived are read before a decision.
                    biased;
                    _ = conn.as_mut() => break,
                    _ = closing.cancelled(), if !ending => ending = true,
                    _ = slot.conn().close.notified(), if !ending && evicting.is_none() => {
                        evicting = Some(Box::pin(tokio::time::sleep(EVICTION_SETTLE)));
                    }
                    _ = async { if let Some(s) = evicting.as_mut() { s.await } }, if evicting.is_some() && !ending => {
                        evicting = None;
                        // A request that arrived meanwhile is served, not cut off.
                        ending = !slot.conn().has_request();
                    }
                    _ = ticks.tick(), if !ending => {
                        ending = slot.idle_for().is_some_and(|idle| idle >= idle_timeout);
                    }
                }
                if ending {
                    // Closes at once when idle; otherwise after the request in flight.
                    conn.as_mut().graceful_shutdown();
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    closing.cancel();
    tasks.close();
    tasks.wait().await;
}

/// A stream asked for on a connection kept for short requests: 503 with `Retry-After`.
fn reserved_refusal(max: usize) -> axum::response::Response {
    let mut response = crate::reply::ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the server's {max} connections (limits.max_connections) all have a request in flight; this connection is kept for short requests and cannot hold a stream; try again in {RETRY_AFTER_SECONDS} s"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    response
}

/// Serves one request on a connection past every slot: `GET /healthz` is answered, anything
/// else gets 503 with `Retry-After`; then the connection is closed.
async fn overflow(stream: tokio::net::TcpStream, peer: SocketAddr, router: Router, max: usize) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let mut req = req.map(axum::body::Body::new);
        req.extensions_mut().insert(ConnectInfo(peer));
        let health = req.method() == Method::GET && req.uri().path() == "/healthz";
        let call = health.then(|| router.clone().call(req));
        async move {
            match call {
                Some(call) => call.await,
                None => {
                    tracing::warn!(%peer, limit = max, "refused a request: every open connection has a request in flight (limits.max_connections)");
                    Ok(full_refusal(max))
                }
            }
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .keep_alive(false)
        .header_read_timeout(OVERFLOW_TIMEOUT);
    let stream = stall::WriteStall::new(stream, OVERFLOW_TIMEOUT, None);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(OVERFLOW_TIMEOUT * 2, conn).await;
}

/// A request past every slot: 503 with `Retry-After`.
fn full_refusal(max: usize) -> axum::response::Response {
    let mut response = crate::reply::ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the server has {max} open connections, its limit (limits.max_connections), and each has a request in flight; nothing was run, try again in {RETRY_AFTER_SECONDS} s"),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    response
}
