//! A sandbox process: its pass thread reads frames on stdin, runs one pass at a time with the
//! in-process machinery ([`Slot`], [`run_pass`]), and writes the pass's host calls, console
//! lines and end on stdout.
//!
//! While a pass waits for a host reply its thread reads the reply from stdin itself (no
//! other thread to hop through: a host call costs the parent one wake-up and this thread
//! one). A cancel comes as a signal, which also interrupts that read ([`super::sys`]). The
//! main thread reads the first frame, confines the process ([`super::confine`]) and then
//! only waits for its parent to close its end of stdout (or die), to end the process then,
//! whatever the pass is doing: no thread is made after confinement.

use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::{ExecuteRequest, Host, Namespace, PassEnd};

use super::channel::{quit, ChannelHost, Output, Replies};
use super::protocol::{
    next_blocking, FrameBuffer, FromChild, Limits, Next, ToChild, MAX_PARENT_FRAME,
};
use super::{confine, sys};
use crate::compiled::CodeCache;
use crate::options::QuickJsOptions;
use crate::pass::{run_pass, PassJob, ReplyWait};
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

/// Frames from the parent, read by the pass thread.
struct Input(FrameBuffer);

impl Input {
    /// The next frame, waiting for it; `None` when a signal interrupted the wait. Ends the
    /// process at the end of the stream, or at a frame that breaks the protocol.
    fn next(&mut self) -> Option<ToChild> {
        match next_blocking(&mut self.0, sys::read_stdin) {
            Ok(Next::Frame(frame)) => Some(frame),
            Ok(Next::Interrupted) => None,
            Ok(Next::End) => std::process::exit(0),
            Err(e) => quit(&e.to_string()),
        }
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

fn serve() -> io::Result<()> {
    let mut input = Input(FrameBuffer::new(MAX_PARENT_FRAME));
    let limits = loop {
        match next_blocking(&mut input.0, sys::read_stdin) {
            Ok(Next::Frame(ToChild::Init(limits))) => break limits,
            Ok(Next::Frame(_)) => return Err(io::Error::other("the first message was not Init")),
            Ok(Next::Interrupted) => continue,
            Ok(Next::End) => return Ok(()),
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
    };
    let output = Arc::new(Output::new());
    let options = Arc::new(options_of(&limits));
    // Made now: the first use reads the system's core count, which confinement refuses.
    let _ = crate::turns::Turns::shared();
    let cancel = Arc::new(AtomicBool::new(false));
    sys::install_handlers(cancel.clone())?;
    // Only the pass thread takes the signals: a cancel is handled before that thread can
    // read its next pass.
    sys::block_signals()?;
    let (warm, warmed) = mpsc::sync_channel::<()>(1);
    let (go, started) = mpsc::sync_channel::<Input>(1);
    let pass_thread = {
        let output = output.clone();
        let options = options.clone();
        std::thread::Builder::new()
            .name("codemode-sandbox-pass".into())
            .stack_size(options.thread_stack_size())
            .spawn(move || {
                if let Err(e) = sys::unblock_signals() {
                    quit(&format!("cannot take signals: {e}"));
                }
                // A runtime made now (the first pass's, if its namespaces are none) and the
                // thread's allocator state count in the address space measured below.
                if let Ok(slot) = Slot::take(&options, &[]) {
                    slot.put_back(true, &options);
                }
                let _ = warm.send(());
                let Ok(input) = started.recv() else {
                    std::process::exit(0)
                };
                pass_loop(input, &output, &options, cancel)
            })?
    };
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
    if go.send(input).is_err() {
        return Err(io::Error::other("the pass thread stopped"));
    }
    // The parent gone, the process ends, even with its pass stuck in a built-in.
    if sys::wait_until_output_closed() {
        std::process::exit(0);
    }
    let _ = pass_thread.join();
    Err(io::Error::other("the pass thread stopped"))
}

/// How the pass thread waits for a host reply: it reads the next frame itself.
struct FrameWait {
    input: Mutex<Input>,
    replies: Arc<Replies>,
    /// Whether the tick is armed (from the pass's first wait to its end).
    ticking: AtomicBool,
}

impl FrameWait {
    /// The next frame between passes, waiting for it.
    fn next(&self) -> ToChild {
        let mut input = self.input.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(frame) = input.next() {
                return frame;
            }
        }
    }

    /// After a pass: the tick stops.
    fn pass_ended(&self) {
        if self.ticking.swap(false, Ordering::Relaxed) {
            let _ = sys::tick(None);
        }
    }
}

impl ReplyWait for FrameWait {
    fn wait(&self, deadline: Instant) {
        if !self.ticking.swap(true, Ordering::Relaxed) {
            let first = deadline.saturating_duration_since(Instant::now());
            if let Err(e) = sys::tick(Some(first)) {
                quit(&format!("cannot start the tick: {e}"));
            }
        }
        let frame = {
            let mut input = self.input.lock().unwrap_or_else(|p| p.into_inner());
            input.next()
        };
        match frame {
            None => {}
            Some(ToChild::Reply { id, reply }) => self.replies.deliver(id, reply.into()),
            Some(_) => quit("a message out of place during a pass"),
        }
    }
}

fn pass_loop(
    input: Input,
    output: &Arc<Output>,
    options: &Arc<QuickJsOptions>,
    cancel: Arc<AtomicBool>,
) -> ! {
    let cache = Arc::new(CodeCache::default());
    let mut namespaces: Vec<Namespace> = Vec::new();
    let replies = Arc::new(Replies::default());
    let wait = Arc::new(FrameWait {
        input: Mutex::new(input),
        replies: replies.clone(),
        ticking: AtomicBool::new(false),
    });
    let host: Arc<dyn Host> = Arc::new(ChannelHost {
        output: output.clone(),
        replies: replies.clone(),
    });
    loop {
        let (code, sent, clock) = match wait.next() {
            ToChild::Pass {
                code,
                namespaces,
                clock,
                random_seed,
            } => {
                let tape = codemode::ClockTape {
                    now: clock,
                    steps: Vec::new(),
                };
                (code, namespaces, codemode::PassClock { tape, random_seed })
            }
            ToChild::Probe => {
                let (socket, open, fork) = confine::probe();
                if output
                    .send(&FromChild::Probed { socket, open, fork })
                    .is_err()
                {
                    quit("");
                }
                continue;
            }
            // A reply to a call of a pass that ended.
            ToChild::Reply { .. } => continue,
            ToChild::Init(_) => quit("a second Init message"),
        };
        if let Some(sent) = sent {
            namespaces = sent.into_iter().map(|n| n.into_namespace()).collect();
        }
        // A cancel of the last pass was handled before this pass's frame could be read.
        cancel.store(false, Ordering::SeqCst);
        let request = ExecuteRequest {
            code,
            namespaces: namespaces.clone(),
            clock,
        };
        let (end, spent) = run_one(request, &host, &wait, &cancel, options, &cache);
        wait.pass_ended();
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
}

type Ended = (PassEnd, Option<(Slot, bool)>);

/// Runs one pass; how it ended (with the runtime to put back) and whether the thread is spent.
fn run_one(
    request: ExecuteRequest,
    host: &Arc<dyn Host>,
    wait: &Arc<FrameWait>,
    cancel: &Arc<AtomicBool>,
    options: &Arc<QuickJsOptions>,
    cache: &Arc<CodeCache>,
) -> (Ended, bool) {
    let slot = match Slot::take(options, &request.namespaces) {
        Ok(slot) => slot,
        Err(message) => return ((PassEnd::Failed(message), None), false),
    };
    let job = PassJob {
        request,
        host: host.clone(),
        handle: None,
        cancel: cancel.clone(),
        options: options.clone(),
        cache: cache.clone(),
        inline: false,
        wait: Some(wait.clone() as Arc<dyn ReplyWait>),
    };
    let seed = job.request.clock.random_seed;
    match panic::catch_unwind(AssertUnwindSafe(|| run_pass(slot.ready(seed), job))) {
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
