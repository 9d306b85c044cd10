//! Which open connections are idle (no request in flight), oldest first, so a full server
//! closes one of them to make room for a new connection instead of refusing it; and the
//! response body that marks its connection busy until it is sent whole.

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// An idle connection is closed to make room only once it has been idle this long: a new
/// client gets time to send its first request.
pub const EVICTABLE_AFTER: Duration = Duration::from_millis(250);
/// A connection that has sent part of a request (the server has not started it yet: it is
/// still arriving, or the server is busy) is closed to make room only after this long.
pub const RECEIVING_EVICTABLE_AFTER: Duration = Duration::from_secs(2);

/// The open connections, and the idle ones by when they became idle.
#[derive(Default)]
pub struct Slots {
    open: AtomicUsize,
    next_key: AtomicU64,
    idle: Mutex<BTreeMap<u64, (Instant, Arc<Conn>)>>,
}

/// One open connection as [`Slots`] knows it.
pub struct Conn {
    /// Requests in flight (their responses not yet sent whole).
    busy: AtomicUsize,
    /// Its key in the idle map while idle.
    key: Mutex<Option<u64>>,
    /// When it last became idle (or opened).
    idle_since: Mutex<Instant>,
    /// Whether bytes of a request arrived since it became idle, and when the first did.
    receiving: AtomicBool,
    received_at: Mutex<Option<Instant>>,
    /// Whether its last read found nothing waiting: a connection not read since it was
    /// accepted may hold a request the busy server has not looked at yet.
    drained: AtomicBool,
    /// Wakes its task to close it.
    pub close: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Slots {
    /// Connections open now.
    #[cfg(test)]
    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Takes a slot for a new connection when fewer than `max` are open, or when an idle
    /// one could be told to close to make room; `None`: every slot is busy.
    pub fn take(self: &Arc<Self>, max: usize) -> Option<Slot> {
        let open = self.open.fetch_add(1, Ordering::SeqCst);
        if open >= max && !self.evict_oldest_idle() {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            key: Mutex::new(None),
            idle_since: Mutex::new(Instant::now()),
            receiving: AtomicBool::new(false),
            received_at: Mutex::new(None),
            drained: AtomicBool::new(false),
            close: Notify::new(),
        });
        self.mark_idle(&conn);
        Some(Slot {
            slots: self.clone(),
            conn,
        })
    }

    /// Tells the connection idle longest to close: idle at least [`EVICTABLE_AFTER`], and
    /// when part of a request arrived, for at least [`RECEIVING_EVICTABLE_AFTER`].
    fn evict_oldest_idle(&self) -> bool {
        let mut idle = lock(&self.idle);
        let chosen = idle.iter().find_map(|(&key, (since, conn))| {
            let evictable = match *lock(&conn.received_at) {
                Some(at) => at.elapsed() >= RECEIVING_EVICTABLE_AFTER,
                None => conn.drained.load(Ordering::SeqCst) && since.elapsed() >= EVICTABLE_AFTER,
            };
            evictable.then_some(key)
        });
        let Some((_, conn)) = chosen.and_then(|key| idle.remove(&key)) else {
            return false;
        };
        *lock(&conn.key) = None;
        conn.close.notify_one();
        true
    }

    fn mark_idle(&self, conn: &Arc<Conn>) {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        *lock(&conn.idle_since) = now;
        *lock(&conn.received_at) = None;
        conn.receiving.store(false, Ordering::SeqCst);
        let mut idle = lock(&self.idle);
        *lock(&conn.key) = Some(key);
        idle.insert(key, (now, conn.clone()));
    }

    fn mark_busy(&self, conn: &Conn) {
        let mut idle = lock(&self.idle);
        if let Some(key) = lock(&conn.key).take() {
            idle.remove(&key);
        }
    }
}

/// A connection's slot, given back when dropped.
pub struct Slot {
    slots: Arc<Slots>,
    conn: Arc<Conn>,
}

impl Conn {
    /// Whether a request is in flight or part of one arrived.
    pub fn has_request(&self) -> bool {
        self.busy.load(Ordering::SeqCst) > 0 || self.receiving.load(Ordering::SeqCst)
    }

    /// Notes that a read found nothing waiting.
    pub fn drained(&self) {
        self.drained.store(true, Ordering::Relaxed);
    }

    /// Notes that bytes arrived (the start of a request, while idle).
    pub fn received(&self) {
        self.drained.store(false, Ordering::Relaxed);
        if self.busy.load(Ordering::Relaxed) == 0 && !self.receiving.swap(true, Ordering::SeqCst) {
            *lock(&self.received_at) = Some(Instant::now());
        }
    }
}

impl Slot {
    /// The connection this slot holds.
    pub fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }

    /// Marks a request in flight until the returned guard is dropped.
    pub fn request(&self) -> InFlight {
        if self.conn.busy.fetch_add(1, Ordering::SeqCst) == 0 {
            self.slots.mark_busy(&self.conn);
        }
        InFlight {
            slots: self.slots.clone(),
            conn: self.conn.clone(),
        }
    }

    /// How long the connection has been idle (`None`: a request is in flight).
    pub fn idle_for(&self) -> Option<Duration> {
        (self.conn.busy.load(Ordering::SeqCst) == 0).then(|| lock(&self.conn.idle_since).elapsed())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.mark_busy(&self.conn);
        self.slots.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request in flight; its connection becomes idle again when the last one is dropped.
pub struct InFlight {
    slots: Arc<Slots>,
    conn: Arc<Conn>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.conn.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.slots.mark_idle(&self.conn);
        }
    }
}

/// A response body holding its request's [`InFlight`] until it is sent whole or dropped.
pub struct Tracked {
    /// The body.
    pub inner: axum::body::Body,
    /// Dropped with the body.
    pub _in_flight: InFlight,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_server_closes_its_oldest_idle_connection_and_never_a_busy_one() {
        let slots = Arc::new(Slots::default());
        let idle = slots.take(2).expect("a free slot");
        let busy = slots.take(2).expect("a free slot");
        let _request = busy.request();
        // The idle one is too new to be closed for room...
        idle.conn().drained();
        assert!(slots.take(2).is_none());
        std::thread::sleep(EVICTABLE_AFTER);
        // ...and, until it was read and found empty, may hold a request the server has not
        // looked at yet.
        idle.conn().received();
        assert!(slots.take(2).is_none());
        // Once that request is answered and nothing more came, it is idle again.
        drop(idle.request());
        idle.conn().drained();
        std::thread::sleep(EVICTABLE_AFTER);
        let third = slots.take(2).expect("room made by closing the idle one");
        assert!(idle.idle_for().is_some());
        // Now only the third is idle, and too new; the busy one is never chosen.
        third.conn().drained();
        assert!(slots.take(2).is_none());
        assert!(busy.idle_for().is_none());
        drop((idle, third));
        assert_eq!(slots.open(), 1);
    }
}
