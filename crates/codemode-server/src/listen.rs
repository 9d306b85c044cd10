//! Accepting connections: a listen backlog of 1,024, a cap on open connections (past it, a
//! JSON 503 and the connection closed), and a header timeout that also ends idle keep-alive
//! connections (hyper starts it whenever a connection waits for a request's headers) and
//! connections whose client takes nothing the server writes for as long ([`stall`]).

mod stall;

use axum::extract::connect_info::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;
use tower_service::Service;

/// The listen backlog: connections the kernel queues before they are accepted.
pub const BACKLOG: u32 = 1024;
/// Default time to send a request's headers, and to sit idle between requests.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How connections are accepted and kept.
#[derive(Debug, Clone, Copy)]
pub struct ListenOptions {
    /// Time to send a request's headers, to sit idle between requests, and to take nothing
    /// of what the server writes.
    pub header_timeout: Duration,
    /// Open connections served at once.
    pub max_connections: usize,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
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
    let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = options.max_connections, "refused a connection: too many open connections (limits.max_connections)");
            tokio::spawn(refuse(stream, options.max_connections));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(axum::body::Body::new);
            req.extensions_mut().insert(ConnectInfo(peer));
            router.clone().call(req)
        });
        let stream = stall::WriteStall::new(stream, options.header_timeout);
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Answers 503 with a JSON error on a connection past the cap, then closes it.
async fn refuse(mut stream: tokio::net::TcpStream, limit: usize) {
    let body = format!(
        "{{\"error\":\"the server has {limit} open connections, its limit (limits.max_connections); try again shortly\"}}"
    );
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), write).await;
}
