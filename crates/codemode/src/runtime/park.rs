//! The host futures' side of the delivery gate: a call in flight is counted while it is open,
//! and a future waiting for its turn (or for an approval) parks until it may go on. The last
//! future to park while no other can progress decides how the pass stops.

use super::cursor::{ReplayCursor, Stop};
use super::delivery::Wait;
use super::flush::lock;
use super::replay::Divergence;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// A host call in flight, counted by the delivery gate until it finishes or is dropped.
pub(super) struct Open(pub(super) Arc<Mutex<ReplayCursor>>);

impl Drop for Open {
    fn drop(&mut self) {
        lock(&self.0).delivery.closed(None);
    }
}

/// A host future parked on the delivery gate; `true` when it may go on, `false` when the
/// pass stops. The last future to park while no other can progress decides the stop.
pub(super) struct Parked<'a> {
    pub(super) cursor: &'a Mutex<ReplayCursor>,
    pub(super) wait: Wait,
    /// The gate's epoch when this future parked, while that park still counts.
    pub(super) at: Option<u64>,
}

impl Future for Parked<'_> {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let at = self.at.take();
        let mut cursor = lock(self.cursor);
        cursor.delivery.unpark(at);
        if cursor.stop.is_some() {
            return Poll::Ready(false);
        }
        if let Wait::Turn(ticket) = self.wait {
            if cursor.delivery.is_turn(ticket) {
                cursor.delivery.deliver(ticket);
                return Poll::Ready(true);
            }
        }
        let (epoch, stuck) = cursor.delivery.park(cx.waker());
        if !stuck {
            drop(cursor);
            self.at = Some(epoch);
            return Poll::Pending;
        }
        let stop = if !cursor.delivery.awaiting.is_empty() {
            Stop::Pause(cursor.delivery.awaiting.clone())
        } else {
            match cursor.delivery.due_next() {
                Some((seq, name)) => Stop::Diverged(Divergence::Delivery {
                    seq,
                    name: name.to_string(),
                }),
                None => Stop::Fail(
                    "internal error: every call in flight waits for a result that no call will deliver"
                        .into(),
                ),
            }
        };
        cursor.stop(stop);
        Poll::Ready(false)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        if self.at.is_some() {
            lock(self.cursor).delivery.unpark(self.at);
        }
    }
}
