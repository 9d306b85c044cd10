//! A sandbox process: reads frames on stdin, runs one pass at a time on its pass thread, and
//! writes the pass's host calls, console lines and end on stdout.
//!
//! Threads: the main thread reads frames (replies go to the [`Replies`] queue, a cancel sets
//! the pass's stop flag); the pass thread runs passes with the in-process machinery
//! ([`Slot`], [`run_pass`]) and a [`Host`] that forwards each call as a frame. Both exist
//! before the process confines itself ([`super::confine`]): no thread is made after that.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use codemode::{ExecuteRequest, Host, HostCall, HostReply, Namespace, PassEnd};
use futures::future::BoxFuture;

use super::confine;
use super::protocol::{
    encode, read_frame, write_frame, FromChild, Limits, ToChild, MAX_PARENT_FRAME,
};
use crate::compiled::CodeCache;
use crate::options::QuickJsOptions;
use crate::pass::{run_pass, PassJob};
use crate::slot::Slot;

/// Runs this process as a sandbox worker until its parent closes stdin; never returns.
///
/// Call it first thing in `main` (before any async runtime or thread is started) when the
/// process was started as a worker, e.g. by a hidden first argument.
pub fn run_worker() -> ! {
    let code = match serve() {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(io::stderr(), "codemode sandbox process: {e}");
            1
        }
    };
    std::process::exit(code)
}

/// Frames to the parent, written whole by one thread at a time.
struct Output(Mutex<OutputState>);

struct OutputState {
    out: io::Stdout,
    /// Frames held until the next one sent ([`Output::hold`]).
    held: Vec<u8>,
}

impl Output {
    fn new() -> Self {
        Output(Mutex::new(OutputState {
            out: io::stdout(),
            held: Vec::new(),
        }))
    }

    /// Sends `frame` after every frame held before it.
    fn send(&self, frame: &FromChild) -> io::Result<()> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if state.held.is_empty() {
            return write_frame(&mut state.out, frame);
        }
        let mut bytes = std::mem::take(&mut state.held);
        bytes.extend_from_slice(&encode(frame));
        let written = state.out.write_all(&bytes).and_then(|()| state.out.flush());
        bytes.clear();
        state.held = bytes;
        written
    }

    /// Keeps `frame` to go out with the next frame sent: a call goes with its `Polled`, so a
    /// call awaited at once costs one write.
    fn hold(&self, frame: &FromChild) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = encode(frame);
        state.held.extend_from_slice(&bytes);
    }
}

fn options_of(limits: &Limits) -> QuickJsOptions {
    QuickJsOptions::default()
        .with_wall_time(Duration::from_millis(limits.wall_time_ms))
        .with_memory_limit(limits.memory_limit)
        .with_max_stack_size(limits.max_stack_size)
        .with_max_console_bytes(limits.max_console_bytes)
        .with_max_code_bytes(limits.max_code_bytes)
}

/// What the reader hands the pass thread.
enum Job {
    Pass {
        code: String,
        namespaces: Option<Vec<Namespace>>,
        cancel: Arc<AtomicBool>,
    },
    Probe,
}

fn serve() -> io::Result<()> {
    let mut input = io::stdin().lock();
    let output = Arc::new(Output::new());
    let limits = match read_frame::<ToChild>(&mut input, MAX_PARENT_FRAME) {
        Ok(Some(ToChild::Init(limits))) => limits,
        Ok(None) => return Ok(()),
        Ok(Some(_)) => return Err(io::Error::other("the first message was not Init")),
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    let options = Arc::new(options_of(&limits));
    // Made now: the first use reads the system's core count, which confinement refuses.
    let _ = crate::turns::Turns::shared();
    let replies = Arc::new(Replies::default());
    let (jobs, receiver) = mpsc::channel::<Job>();
    let (warm, warmed) = mpsc::sync_channel::<()>(1);
    {
        let output = output.clone();
        let replies = replies.clone();
        let options = options.clone();
        std::thread::Builder::new()
            .name("codemode-sandbox-pass".into())
            .stack_size(options.thread_stack_size())
            .spawn(move || {
                // A runtime made now (the first pass's, if its namespaces are none) and the
                // thread's allocator state count in the address space measured below.
                if let Ok(slot) = Slot::take(&options, &[]) {
                    slot.put_back(true, &options);
                }
                let _ = warm.send(());
                pass_loop(&receiver, &output, &replies, &options)
            })?;
    }
    if warmed.recv().is_err() {
        return Err(io::Error::other("the pass thread did not start"));
    }
    match confine::confine(limits.memory_limit) {
        Ok(report) => output.send(&FromChild::Ready {
            baseline_vsz: report.baseline_vsz,
            address_limit: report.address_limit,
        })?,
        Err(reason) => {
            output.send(&FromChild::Refused(reason))?;
            return Ok(());
        }
    }
    let mut current = Arc::new(AtomicBool::new(false));
    loop {
        let frame = match read_frame::<ToChild>(&mut input, MAX_PARENT_FRAME) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(()),
            Err(e) => return Err(io::Error::other(e.to_string())),
        };
        match frame {
            ToChild::Pass { code, namespaces } => {
                current = Arc::new(AtomicBool::new(false));
                let namespaces =
                    namespaces.map(|n| n.into_iter().map(|n| n.into_namespace()).collect());
                let job = Job::Pass {
                    code,
                    namespaces,
                    cancel: current.clone(),
                };
                if jobs.send(job).is_err() {
                    return Err(io::Error::other("the pass thread stopped"));
                }
            }
            ToChild::Reply { id, reply } => replies.deliver(id, reply.into()),
            ToChild::Cancel => current.store(true, Ordering::Relaxed),
            ToChild::Probe => {
                if jobs.send(Job::Probe).is_err() {
                    return Err(io::Error::other("the pass thread stopped"));
                }
            }
            ToChild::Init(_) => return Err(io::Error::other("a second Init message")),
        }
    }
}

fn pass_loop(
    jobs: &Receiver<Job>,
    output: &Arc<Output>,
    replies: &Arc<Replies>,
    options: &Arc<QuickJsOptions>,
) {
    let cache = Arc::new(CodeCache::default());
    let mut namespaces: Vec<Namespace> = Vec::new();
    let host: Arc<dyn Host> = Arc::new(ChannelHost {
        output: output.clone(),
        replies: replies.clone(),
    });
    while let Ok(job) = jobs.recv() {
        let (code, cancel) = match job {
            Job::Probe => {
                let (socket, open, fork) = confine::probe();
                if output
                    .send(&FromChild::Probed { socket, open, fork })
                    .is_err()
                {
                    std::process::exit(1);
                }
                continue;
            }
            Job::Pass {
                code,
                namespaces: sent,
                cancel,
            } => {
                if let Some(sent) = sent {
                    namespaces = sent;
                }
                (code, cancel)
            }
        };
        let (end, spent) = run_one(code, &namespaces, &host, cancel, options, &cache);
        replies.reset();
        if output
            .send(&FromChild::Done {
                end: end.0.into(),
                spent,
            })
            .is_err()
            || spent
        {
            std::process::exit(0);
        }
        if let Some((slot, clean)) = end.1 {
            // Putting the runtime back costs a copy: done once the parent has the result.
            slot.put_back(clean, options);
        }
    }
    std::process::exit(0);
}

type Ended = (PassEnd, Option<(Slot, bool)>);

/// Runs one pass; how it ended (with the runtime to put back) and whether the thread is spent.
fn run_one(
    code: String,
    namespaces: &[Namespace],
    host: &Arc<dyn Host>,
    cancel: Arc<AtomicBool>,
    options: &Arc<QuickJsOptions>,
    cache: &Arc<CodeCache>,
) -> (Ended, bool) {
    let slot = match Slot::take(options, namespaces) {
        Ok(slot) => slot,
        Err(message) => return ((PassEnd::Failed(message), None), false),
    };
    let job = PassJob {
        request: ExecuteRequest {
            code,
            namespaces: namespaces.to_vec(),
        },
        host: host.clone(),
        handle: None,
        cancel,
        options: options.clone(),
        cache: cache.clone(),
        inline: false,
    };
    match panic::catch_unwind(AssertUnwindSafe(|| run_pass(slot.ready(), job))) {
        Ok((result, clean)) => (
            (result.end, Some((slot, clean))),
            crate::turns::thread_spent(),
        ),
        Err(_) => (
            (
                PassEnd::Failed("internal error in the sandbox; the pass was stopped".into()),
                None,
            ),
            true,
        ),
    }
}

/// The host inside a sandbox process: each call is a frame to the parent, answered by a
/// reply frame.
struct ChannelHost {
    output: Arc<Output>,
    replies: Arc<Replies>,
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

    fn console(&self, line: &str) {
        if self
            .output
            .send(&FromChild::Console(line.to_string()))
            .is_err()
        {
            std::process::exit(1);
        }
    }
}

/// Replies from the parent, handed to the code strictly in the order they arrived: a call's
/// future is ready only when its reply is the first one not yet taken.
#[derive(Default)]
struct Replies(Mutex<RepliesState>);

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

    /// From the reader: a reply arrived (one for no call of this pass is dropped).
    fn deliver(&self, id: u64, reply: HostReply) {
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
    fn reset(&self) {
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
                std::process::exit(1);
            }
        }
        this.replies.poll(this.id, cx)
    }
}
