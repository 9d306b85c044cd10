//! A connection whose client stops taking what the server writes is closed after a limit: a
//! client that never reads an event stream (or a slow-read attack) cannot hold a connection,
//! and what is queued for it, for ever.

use super::slots::Conn;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A stream whose writes fail with `TimedOut` once they have made no progress for `limit`;
/// it tells its connection's slot when bytes arrive.
pub struct WriteStall<S> {
    inner: S,
    conn: Option<Arc<Conn>>,
    limit: Duration,
    /// Set while a write waits; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteStall<S> {
    /// `inner`, with writes that may wait at most `limit` for the peer.
    pub fn new(inner: S, limit: Duration, conn: Option<Arc<Conn>>) -> WriteStall<S> {
        WriteStall {
            inner,
            conn,
            limit,
            stalled: None,
        }
    }

    /// After a write came back `Pending`: starts the clock, or says it ran out.
    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client took nothing the server wrote for {limit:?}"),
            )),
            Poll::Pending => Poll::Pending,
        }
    }

    fn track<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => match self.waiting(cx) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStall<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Some(conn) = &self.conn {
            if buf.filled().len() > before {
                conn.received();
            } else if polled.is_pending() {
                conn.drained();
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStall<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.track(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.track(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.track(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
