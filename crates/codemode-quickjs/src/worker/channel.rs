//! The two ends of a sandbox process's pipes as its pass sees them: [`Output`], the frames
//! it writes, and [`ChannelHost`], the [`Host`] that sends each call as a frame and hands the
//! code the replies (which the pass thread reads while it waits, see `child.rs`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io::{self, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use codemode::{Host, HostCall, HostReply};
use futures::future::BoxFuture;

use super::protocol::{encode_into, FromChild};
use super::sys;

/// Ends the process: its parent is gone or broke the protocol (said on stderr).
pub(super) fn quit(why: &str) -> ! {
    if !why.is_empty() {
        let _ = writeln!(io::stderr(), "codemode sandbox process: {why}");
    }
    std::process::exit(1)
}

/// Frames to the parent, each written whole in one system call.
pub(super) struct Output(Mutex<Vec<u8>>);

impl Output {
    /// No frame held.
    pub(super) fn new() -> Self {
        Output(Mutex::new(Vec::with_capacity(4096)))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `frame` after every frame held before it.
    pub(super) fn send(&self, frame: &FromChild) -> io::Result<()> {
        let mut bytes = self.lock();
        encode_into(&mut bytes, frame);
        let written = sys::write_stdout(&bytes);
        bytes.clear();
        if bytes.capacity() > 1 << 20 {
            bytes.shrink_to(4096);
        }
        written
    }

    /// Keeps `frame` to go out with the next frame sent: a call goes with its `Polled`, so a
    /// call awaited at once costs one write.
    fn hold(&self, frame: &FromChild) {
        encode_into(&mut self.lock(), frame);
    }
}

/// The host inside a sandbox process: each call is a frame to the parent, answered by a
/// reply frame.
pub(super) struct ChannelHost {
    pub(super) output: Arc<Output>,
    pub(super) replies: Arc<Replies>,
}

impl ChannelHost {
    fn issue(&self, call: HostCall) -> ReplyFuture {
        let id = self.replies.register();
        let frame = FromChild::Call {
            id,
            namespace: call.namespace,
            method: call.method,
            args: call.args,
        };
        self.output.hold(&frame);
        ReplyFuture {
            id,
            replies: self.replies.clone(),
            output: Some(self.output.clone()),
        }
    }
}

impl Host for ChannelHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(self.issue(call))
    }

    fn call_shared(self: Arc<Self>, call: HostCall) -> BoxFuture<'static, HostReply> {
        Box::pin(self.issue(call))
    }

    fn clock_readings(&self, runs: &[codemode::ClockRun]) {
        // Goes out before the call that follows (or the end of the pass), in one write.
        self.output.hold(&FromChild::Clock(runs.to_vec()));
    }

    fn console(&self, line: &str) {
        if self
            .output
            .send(&FromChild::Console(line.to_string()))
            .is_err()
        {
            quit("");
        }
    }
}

/// Replies from the parent, handed to the code strictly in the order they arrived: a call's
/// future is ready only when its reply is the first one not yet taken.
#[derive(Default)]
pub(super) struct Replies(Mutex<RepliesState>);

#[derive(Default)]
struct RepliesState {
    next_id: u64,
    /// Calls of this pass not yet answered.
    pending: HashSet<u64>,
    arrived: VecDeque<(u64, HostReply)>,
    wakers: HashMap<u64, Waker>,
}

impl Replies {
    fn lock(&self) -> MutexGuard<'_, RepliesState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn register(&self) -> u64 {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.pending.insert(id);
        id
    }

    /// A reply arrived (one for no call of this pass is dropped).
    pub(super) fn deliver(&self, id: u64, reply: HostReply) {
        let mut state = self.lock();
        if !state.pending.remove(&id) {
            return;
        }
        state.arrived.push_back((id, reply));
        if state.arrived.len() == 1 {
            if let Some(waker) = state.wakers.remove(&id) {
                drop(state);
                waker.wake();
            }
        }
    }

    /// After a pass: nothing of it is kept.
    pub(super) fn reset(&self) {
        let mut state = self.lock();
        state.pending.clear();
        state.arrived.clear();
        state.wakers.clear();
    }

    fn poll(&self, id: u64, cx: &mut Context<'_>) -> Poll<HostReply> {
        let mut state = self.lock();
        if state.arrived.front().is_some_and(|(first, _)| *first == id) {
            let Some((_, reply)) = state.arrived.pop_front() else {
                return Poll::Pending;
            };
            state.wakers.remove(&id);
            let next = state
                .arrived
                .front()
                .and_then(|(next, _)| state.wakers.get(next).cloned());
            drop(state);
            if let Some(waker) = next {
                waker.wake();
            }
            return Poll::Ready(reply);
        }
        state.wakers.insert(id, cx.waker().clone());
        Poll::Pending
    }
}

struct ReplyFuture {
    id: u64,
    replies: Arc<Replies>,
    /// Until the first poll, which tells the parent it may start on the call.
    output: Option<Arc<Output>>,
}

impl Future for ReplyFuture {
    type Output = HostReply;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<HostReply> {
        let this = self.get_mut();
        if let Some(output) = this.output.take() {
            if output.send(&FromChild::Polled { id: this.id }).is_err() {
                // The parent is gone: nothing will answer, and the process ends.
                quit("");
            }
        }
        this.replies.poll(this.id, cx)
    }
}
