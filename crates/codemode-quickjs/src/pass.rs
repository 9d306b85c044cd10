//! One pass: a fresh runtime runs the model's code and answers its host calls.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use codemode::{ExecuteRequest, ExecuteResult, Host, HostCall, HostReply, PassEnd, SDK_NAMESPACE};
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use rquickjs::promise::PromiseState;
use rquickjs::{Ctx, Exception, Function, Object, Promise, Value};

use crate::caller::CallerThread;
use crate::clock::PassClockState;
use crate::compiled::{CodeCache, Prepared};
use crate::ffi;
use crate::fresh::{namespace_spec, Fresh, GLUE_KEY};
use crate::memory::MemoryGauge;
use crate::normalize::{Normalized, CODE_FILE};
use crate::options::QuickJsOptions;
use crate::report::{describe, take_thrown};
use crate::snippet_chain;
use crate::turns::{Turn, Turns};
use crate::values::{may_hold_envelope, parse_sandbox_json};

/// The SDK methods, in the order their call ids follow the connector methods.
const SDK_METHODS: [&str; 6] = [
    "search",
    "describe",
    "step",
    "step_result",
    "step_error",
    "run",
];

/// One pass to run, as handed to a sandbox thread.
pub(crate) struct PassJob {
    /// The code and namespaces.
    pub request: ExecuteRequest,
    /// Answers the host calls.
    pub host: Arc<dyn Host>,
    /// The caller's tokio runtime, entered while host futures are polled.
    pub handle: Option<tokio::runtime::Handle>,
    /// Set when the caller stops waiting.
    pub cancel: Arc<AtomicBool>,
    /// The limits.
    pub options: Arc<QuickJsOptions>,
    /// Code prepared by earlier passes.
    pub cache: Arc<CodeCache>,
    /// Runs inline on the caller's tokio worker (see [`CallerThread`]).
    pub inline: bool,
    /// How the pass thread blocks while it waits for a host reply (`None`: it parks until a
    /// host future wakes it).
    pub wait: Option<Arc<dyn ReplyWait>>,
}

/// How a pass thread blocks while it waits for a host reply, when replies do not come by
/// waking it (a sandbox process's pass thread reads them from its pipe itself).
pub(crate) trait ReplyWait: Send + Sync {
    /// Blocks until a reply may have come, the pass may have been cancelled, or its
    /// `deadline` may have passed.
    fn wait(&self, deadline: Instant);
}

/// Why a pass stopped before its code settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Stop {
    Running = 0,
    Deadline = 1,
    Cancelled = 2,
    Console = 3,
    Aborted = 4,
    Memory = 5,
    /// The pass has settled: nothing more may reach the host.
    Ended = 6,
}

/// The stop flag, shared with the interrupt handler.
#[derive(Default)]
struct StopFlag(AtomicU8);

impl StopFlag {
    fn set(&self, stop: Stop) {
        let _ = self
            .0
            .compare_exchange(0, stop as u8, Ordering::SeqCst, Ordering::SeqCst);
    }

    fn get(&self) -> Stop {
        match self.0.load(Ordering::SeqCst) {
            1 => Stop::Deadline,
            2 => Stop::Cancelled,
            3 => Stop::Console,
            4 => Stop::Aborted,
            5 => Stop::Memory,
            6 => Stop::Ended,
            _ => Stop::Running,
        }
    }
}

type Reply = (u64, HostReply);

/// A host call's future, made when the sandbox makes the call (so the host sees every call
/// the moment it is made).
struct HostFuture {
    id: u64,
    future: BoxFuture<'static, HostReply>,
}

impl Future for HostFuture {
    type Output = Reply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Reply> {
        let id = self.id;
        self.future.as_mut().poll(cx).map(|reply| (id, reply))
    }
}

/// What the JavaScript-facing functions share with the driver.
struct PassState<'js> {
    host: Arc<dyn Host>,
    calls: Vec<(String, String)>,
    next_id: Cell<u64>,
    resolvers: RefCell<HashMap<u64, (Function<'js>, Function<'js>)>>,
    /// Calls made and not yet polled, in the order the code made them.
    fresh: RefCell<VecDeque<HostFuture>>,
    in_flight: RefCell<FuturesUnordered<HostFuture>>,
    logs: RefCell<Vec<String>>,
    log_bytes: Cell<usize>,
    stop: Arc<StopFlag>,
    /// An allocation refused for the limit ends the pass before anything else leaves it.
    memory: MemoryGauge,
    max_console_bytes: usize,
    /// For each `codemode.run` call in flight, the chain of snippets its snippet would run in
    /// (the caller's chain and the snippet's name): its script is named after it.
    runs: RefCell<HashMap<u64, Vec<String>>>,
    /// The clock the code reads (its own `Rc`: the functions that read it hold only it).
    clock: Rc<RefCell<PassClockState>>,
}

/// Throws an error that no `catch` or `finally` in the sandbox can observe.
fn throw_uncatchable(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    match Exception::from_message(ctx.clone(), message) {
        Ok(error) => ffi::throw_uncatchable(ctx, error),
        Err(e) => e,
    }
}

impl<'js> PassState<'js> {
    /// Whether the pass goes on (an exhausted memory gauge stops it here, since what the
    /// code caught after a failed allocation may be no error at all).
    fn running(&self) -> bool {
        if self.memory.exhausted() {
            self.stop.set(Stop::Memory);
        }
        self.stop.get() == Stop::Running
    }

    /// Hands the host the clock readings taken since the last call: before each call, so
    /// whatever the call depends on is recorded first, and when the pass ends.
    fn send_clock(&self) {
        let fresh = self.clock.borrow_mut().take_fresh();
        if !fresh.is_empty() {
            self.host.clock_readings(&fresh);
        }
    }

    fn call(&self, ctx: Ctx<'js>, id: usize, args: String) -> rquickjs::Result<Promise<'js>> {
        if !self.running() {
            return Err(throw_uncatchable(&ctx, "the pass has stopped"));
        }
        self.send_clock();
        let Some((namespace, method)) = self.calls.get(id) else {
            return Err(Exception::throw_type(&ctx, "unknown host call"));
        };
        let mut args = parse_sandbox_json(&args, "the arguments")
            .map_err(|message| Exception::throw_type(&ctx, &message))?;
        let run_chain = (namespace == SDK_NAMESPACE && method == "run")
            .then(|| snippet_chain::attach(&ctx, &mut args));
        let call = HostCall {
            namespace: namespace.clone(),
            method: method.clone(),
            args,
        };
        let (promise, resolve, reject) = ctx.promise()?;
        let call_id = self.next_id.get();
        self.next_id.set(call_id + 1);
        if let Some(chain) = run_chain {
            self.runs.borrow_mut().insert(call_id, chain);
        }
        self.fresh.borrow_mut().push_back(HostFuture {
            id: call_id,
            future: self.host.clone().call_shared(call),
        });
        self.resolvers
            .borrow_mut()
            .insert(call_id, (resolve, reject));
        Ok(promise)
    }

    fn log(&self, ctx: Ctx<'js>, level: String, line: String) -> rquickjs::Result<()> {
        if !self.running() {
            return Err(throw_uncatchable(&ctx, "the pass has stopped"));
        }
        let line = match level.as_str() {
            "warn" | "error" => format!("[{level}] {line}"),
            _ => line,
        };
        let used = self.log_bytes.get();
        if used + line.len() <= self.max_console_bytes {
            self.log_bytes.set(used + line.len());
            self.host.console(&line);
            self.logs.borrow_mut().push(line);
            return Ok(());
        }
        let mut room = self.max_console_bytes.saturating_sub(used);
        while room > 0 && !line.is_char_boundary(room) {
            room -= 1;
        }
        let mut logs = self.logs.borrow_mut();
        if room > 0 {
            self.host.console(&line[..room]);
            logs.push(line[..room].to_string());
        }
        let note = format!(
            "[console output truncated: more than {} bytes]",
            self.max_console_bytes
        );
        self.host.console(&note);
        logs.push(note);
        self.log_bytes.set(self.max_console_bytes);
        self.stop.set(Stop::Console);
        Err(throw_uncatchable(&ctx, "console output limit"))
    }
}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

enum Waited {
    Reply(Reply),
    Deadline,
    Cancelled,
}

/// A host reply that is ready now, without waiting.
/// Once the code settled: polls each call it made that the host has not yet seen, so that
/// every call made before the end reaches the host, which finishes and records it (the code
/// sees no reply). The futures are dropped with the pass; the host finishes the calls.
fn hand_over(state: &PassState<'_>, waker: &Waker) {
    state.host.settled();
    let mut cx = TaskContext::from_waker(waker);
    let fresh: Vec<HostFuture> = state.fresh.borrow_mut().drain(..).collect();
    for mut future in fresh {
        if Pin::new(&mut future).poll(&mut cx).is_pending() {
            state.in_flight.borrow_mut().push(future);
        }
    }
}

fn poll_reply(in_flight: &RefCell<FuturesUnordered<HostFuture>>, waker: &Waker) -> Option<Reply> {
    let mut cx = TaskContext::from_waker(waker);
    match in_flight.borrow_mut().poll_next_unpin(&mut cx) {
        Poll::Ready(reply) => reply,
        Poll::Pending => None,
    }
}

fn wait_for_reply(
    in_flight: &RefCell<FuturesUnordered<HostFuture>>,
    waker: &Waker,
    deadline: Instant,
    cancel: &AtomicBool,
    how: Option<&dyn ReplyWait>,
) -> Waited {
    let mut cx = TaskContext::from_waker(waker);
    loop {
        if let Poll::Ready(Some(reply)) = in_flight.borrow_mut().poll_next_unpin(&mut cx) {
            return Waited::Reply(reply);
        }
        if cancel.load(Ordering::Relaxed) {
            return Waited::Cancelled;
        }
        let now = Instant::now();
        if now >= deadline {
            return Waited::Deadline;
        }
        match how {
            Some(how) => how.wait(deadline),
            None => thread::park_timeout((deadline - now).min(Duration::from_millis(50))),
        }
    }
}

/// How a pass stopped at its time limit fails (the runtime reads it as a timeout).
pub(crate) fn time_limit_message(wall_time: Duration) -> String {
    format!(
        "Time limit: the code ran for more than {} ms and was stopped. Make fewer or smaller calls, avoid busy loops, and return sooner.",
        wall_time.as_millis()
    )
}

/// How a pass stopped by a cancel fails.
pub(crate) const CANCELLED_MESSAGE: &str = "The execution was cancelled by the caller.";

fn failed(message: impl Into<String>, logs: Vec<String>) -> ExecuteResult {
    ExecuteResult {
        end: PassEnd::Failed(message.into()),
        logs,
    }
}

/// Runs one pass on the current thread, in `fresh`; the result, and whether the pass left
/// nothing behind that refers to the runtime (every handle dropped, the glue's links to the
/// pass's functions cut), so that the runtime may be put back as made.
pub(crate) fn run_pass(fresh: &Fresh, job: PassJob) -> (ExecuteResult, bool) {
    let PassJob {
        request,
        host,
        handle,
        cancel,
        options,
        cache,
        inline,
        wait,
    } = job;
    let caller = inline.then(|| Arc::new(CallerThread::new()));
    let prepared = match cache.prepare(CODE_FILE, &request.code, options.max_code_bytes) {
        Ok(p) => p,
        Err(e) => return (failed(e.to_string(), Vec::new()), true),
    };
    let deadline = codemode::clock::instant_after(Instant::now(), options.wall_time);
    let stop = Arc::new(StopFlag::default());
    let turn = Turn::new(Turns::shared(), !inline);
    {
        let turn = turn.clone();
        let stop = stop.clone();
        let cancel = cancel.clone();
        let memory = fresh.memory.clone();
        let caller = caller.clone();
        fresh.runtime.set_interrupt_handler(Some(Box::new(move || {
            if stop.get() != Stop::Running {
                return true;
            }
            if memory.exhausted() {
                stop.set(Stop::Memory);
                return true;
            }
            if cancel.load(Ordering::Relaxed) {
                stop.set(Stop::Cancelled);
                return true;
            }
            if Instant::now() >= deadline {
                stop.set(Stop::Deadline);
                return true;
            }
            if let Some(caller) = &caller {
                caller.tick();
            }
            let should_stop = || cancel.load(Ordering::Relaxed) || memory.exhausted();
            let wait = |take: &dyn Fn() -> bool| match &caller {
                Some(caller) => caller.blocking(take),
                None => take(),
            };
            if !turn.tick(deadline, &should_stop, &wait) {
                stop.set(if cancel.load(Ordering::Relaxed) {
                    Stop::Cancelled
                } else if memory.exhausted() {
                    Stop::Memory
                } else {
                    Stop::Deadline
                });
                return true;
            }
            false
        })));
    }
    let _entered = handle.as_ref().map(|h| h.enter());
    let driver = Driver {
        declared: fresh.declared,
        request: &request,
        prepared: &prepared,
        cache: &cache,
        caller: caller.as_deref(),
        options: &options,
        deadline,
        cancel: &cancel,
        stop: &stop,
        memory: &fresh.memory,
        turn: &turn,
        wait: wait.as_deref(),
    };
    let (result, clean) = fresh.context.with(|ctx| driver.run(ctx, host));
    turn.finish();
    // Anything the model's code left queued never runs: the runtime is only put back or
    // freed from here on.
    fresh.runtime.set_interrupt_handler(Some(Box::new(|| true)));
    (result, clean)
}

struct Driver<'a> {
    /// The runtime already has the request's namespaces ([`crate::slot::Slot::take`] hands
    /// out only runtimes made for the request's set; none if they could not be installed).
    declared: bool,
    request: &'a ExecuteRequest,
    /// The model's code, ready to run (error reports map positions through its
    /// `normalized`).
    prepared: &'a Prepared,
    /// Where snippets' code is prepared.
    cache: &'a CodeCache,
    /// Set when the pass runs inline on the caller's worker.
    caller: Option<&'a CallerThread>,
    options: &'a QuickJsOptions,
    deadline: Instant,
    cancel: &'a AtomicBool,
    /// How the thread blocks while it waits for a reply.
    wait: Option<&'a dyn ReplyWait>,
    stop: &'a Arc<StopFlag>,
    /// What the runtime holds: an allocation refused for the limit ends the pass.
    memory: &'a MemoryGauge,
    /// The pass's claim on a turn to run long JavaScript.
    turn: &'a Turn,
}

/// The functions the glue script hands back.
struct Helpers<'js> {
    /// Where the glue keeps the pass's host and console functions.
    link: Object<'js>,
    encode: Function<'js>,
    revive: Function<'js>,
    show: Function<'js>,
}

impl Driver<'_> {
    fn run<'js>(&self, ctx: Ctx<'js>, host: Arc<dyn Host>) -> (ExecuteResult, bool) {
        let mut calls: Vec<(String, String)> = Vec::new();
        for ns in &self.request.namespaces {
            for m in &ns.methods {
                calls.push((ns.name.clone(), m.clone()));
            }
        }
        let sdk_base = calls.len();
        for m in SDK_METHODS {
            calls.push((SDK_NAMESPACE.to_string(), m.to_string()));
        }
        let state = Rc::new(PassState {
            host,
            calls,
            next_id: Cell::new(0),
            resolvers: RefCell::new(HashMap::new()),
            fresh: RefCell::new(VecDeque::new()),
            in_flight: RefCell::new(FuturesUnordered::new()),
            logs: RefCell::new(Vec::new()),
            log_bytes: Cell::new(0),
            stop: self.stop.clone(),
            memory: self.memory.clone(),
            max_console_bytes: self.options.max_console_bytes,
            runs: RefCell::new(HashMap::new()),
            clock: Rc::new(RefCell::new(PassClockState::new(
                &self.request.clock.tape.now,
            ))),
        });
        let (end, unlinked) = match self.install(&ctx, &state, sdk_base) {
            Ok(helpers) => {
                let end = self.drive(&ctx, &state, &helpers);
                // Settled: whatever the code left behind can no longer reach the host.
                self.stop.set(Stop::Ended);
                state.send_clock();
                // Plain property writes: no JavaScript runs, so no interrupt can stop them.
                let unlinked = ["host", "sink", "now", "mark", "skip"]
                    .iter()
                    .all(|key| helpers.link.set(*key, Value::new_null(ctx.clone())).is_ok());
                (end, unlinked)
            }
            Err(e) => (
                PassEnd::Failed(format!("the sandbox could not start: {e}")),
                true,
            ),
        };
        state.resolvers.borrow_mut().clear();
        state.fresh.borrow_mut().clear();
        state.in_flight.borrow_mut().clear();
        let logs = std::mem::take(&mut *state.logs.borrow_mut());
        // The host and console functions hold the state: once their last reference is gone,
        // only this one is left (a cycle through the heap would need a collection first).
        if unlinked && (Rc::strong_count(&state) > 1 || Rc::strong_count(&state.clock) > 1) {
            ctx.run_gc();
        }
        let clean =
            unlinked && Rc::strong_count(&state) == 1 && Rc::strong_count(&state.clock) == 1;
        (ExecuteResult { end, logs }, clean)
    }

    fn install<'js>(
        &self,
        ctx: &Ctx<'js>,
        state: &Rc<PassState<'js>>,
        sdk_base: usize,
    ) -> rquickjs::Result<Helpers<'js>> {
        let call_state = state.clone();
        let host_fn = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, id: usize, args: String| call_state.call(ctx, id, args),
        )?;
        let log_state = state.clone();
        let sink = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, level: String, line: String| log_state.log(ctx, level, line),
        )?;
        let clock = state.clock.clone();
        let now = Function::new(ctx.clone(), move || clock.borrow_mut().read() as f64)?;
        let clock = state.clock.clone();
        let mark = Function::new(ctx.clone(), move || clock.borrow().position() as f64)?;
        let clock = state.clock.clone();
        let skip = Function::new(ctx.clone(), move |reads: f64| {
            if reads.is_finite() && reads > 0.0 {
                clock.borrow_mut().skip_to(reads as u64);
            }
        })?;
        let sdk = Object::new(ctx.clone())?;
        for (k, m) in SDK_METHODS.iter().enumerate() {
            sdk.set(*m, sdk_base + k)?;
        }
        let globals = ctx.globals();
        let helpers: Object = globals.get(GLUE_KEY)?;
        globals.remove(GLUE_KEY)?;
        if !self.declared {
            let declare: Function = helpers.get("declare")?;
            declare.call::<_, ()>((namespace_spec(ctx, &self.request.namespaces)?,))?;
        }
        let bind: Function = helpers.get("bind")?;
        bind.call::<_, ()>((host_fn, sink, sdk, now, mark, skip))?;
        Ok(Helpers {
            link: helpers.get("link")?,
            encode: helpers.get("encodeResult")?,
            revive: helpers.get("reviveWire")?,
            show: helpers.get("show")?,
        })
    }

    fn namespace_names(&self) -> Vec<String> {
        self.request
            .namespaces
            .iter()
            .map(|n| n.name.clone())
            .collect()
    }

    fn caught<'js>(
        &self,
        ctx: &Ctx<'js>,
        helpers: &Helpers<'js>,
        normalized: &Normalized,
    ) -> String {
        let thrown = take_thrown(ctx);
        describe(
            ctx,
            &thrown,
            Some(&helpers.show),
            normalized,
            &self.namespace_names(),
            self.options,
        )
    }

    /// Evaluates prepared code and starts it; returns the promise of its result.
    fn start<'js>(
        &self,
        ctx: &Ctx<'js>,
        prepared: &Prepared,
        file: &str,
        input: Value<'js>,
    ) -> rquickjs::Result<Promise<'js>> {
        let outer: Function = prepared.evaluate(ctx, file)?;
        let inner: Function = outer.call((input,))?;
        inner.call(())
    }

    fn stopped(&self) -> Option<PassEnd> {
        let limit = |what: &str| PassEnd::Failed(what.to_string());
        // A refused allocation ends the pass even when the code caught what the engine threw
        // (which, when the engine could not make the error either, is no error at all).
        if self.memory.exhausted() {
            self.stop.set(Stop::Memory);
        }
        match self.stop.get() {
            Stop::Running | Stop::Ended => None,
            Stop::Aborted => Some(PassEnd::Aborted),
            Stop::Deadline => Some(limit(&time_limit_message(self.options.wall_time))),
            Stop::Cancelled => Some(limit(CANCELLED_MESSAGE)),
            Stop::Memory => Some(limit(&format!(
                "Memory limit: the code used more than {} MiB and was stopped. Work on smaller pieces of data, or ask the connectors to filter and page their results.",
                self.options.memory_limit / (1024 * 1024)
            ))),
            Stop::Console => Some(limit(&format!(
                "Console limit: the code logged more than {} bytes and was stopped. Log less (counts, summaries), and return data as the result instead.",
                self.options.max_console_bytes
            ))),
        }
    }

    fn drive<'js>(
        &self,
        ctx: &Ctx<'js>,
        state: &Rc<PassState<'js>>,
        helpers: &Helpers<'js>,
    ) -> PassEnd {
        let main = match self.start(
            ctx,
            self.prepared,
            CODE_FILE,
            Value::new_undefined(ctx.clone()),
        ) {
            Ok(p) => p,
            Err(_) => {
                if let Some(end) = self.stopped() {
                    return end;
                }
                return PassEnd::Failed(self.caught(ctx, helpers, &self.prepared.normalized));
            }
        };
        let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
        // Replies reach the sandbox one at a time, each once every job the one before caused
        // has run, in the order their futures finish (the host orders them; see
        // `codemode::Host`). A call is polled first in the order the code made it.
        loop {
            while self.stop.get() == Stop::Running && ctx.execute_pending_job() {}
            if let Some(end) = self.stopped() {
                return end;
            }
            match main.state() {
                // Settled: the calls the code made and did not await reach the host, which
                // finishes and records them; the code sees none of their results.
                PromiseState::Resolved => {
                    let end = self.result(ctx, &main, helpers);
                    hand_over(state, &waker);
                    return end;
                }
                PromiseState::Rejected => {
                    let _ = main.result::<Value>();
                    let end = PassEnd::Failed(self.caught(ctx, helpers, &self.prepared.normalized));
                    hand_over(state, &waker);
                    return end;
                }
                PromiseState::Pending => {}
            }
            let next = state.fresh.borrow_mut().pop_front();
            if let Some(mut future) = next {
                let mut cx = TaskContext::from_waker(&waker);
                match Pin::new(&mut future).poll(&mut cx) {
                    Poll::Ready((id, reply)) => {
                        if let Err(end) = self.settle(ctx, state, helpers, id, reply) {
                            return end;
                        }
                    }
                    Poll::Pending => state.in_flight.borrow_mut().push(future),
                }
                continue;
            }
            if state.in_flight.borrow().is_empty() {
                return PassEnd::Failed(
                    "The code is waiting for a promise that nothing will ever settle (no host call is in flight; there are no timers in the sandbox). Await only connector and codemode calls, or promises built from them.".to_string(),
                );
            }
            let waited = match poll_reply(&state.in_flight, &waker) {
                Some(reply) => Waited::Reply(reply),
                None => {
                    let wait = || {
                        wait_for_reply(
                            &state.in_flight,
                            &waker,
                            self.deadline,
                            self.cancel,
                            self.wait,
                        )
                    };
                    self.turn.pause();
                    let waited = match self.caller {
                        Some(caller) => caller.blocking(wait),
                        None => wait(),
                    };
                    self.turn.resume();
                    waited
                }
            };
            match waited {
                Waited::Reply((id, reply)) => {
                    if let Err(end) = self.settle(ctx, state, helpers, id, reply) {
                        return end;
                    }
                }
                Waited::Deadline => {
                    self.stop.set(Stop::Deadline);
                    return self.stopped().unwrap_or(PassEnd::Aborted);
                }
                Waited::Cancelled => {
                    self.stop.set(Stop::Cancelled);
                    return self.stopped().unwrap_or(PassEnd::Aborted);
                }
            }
        }
    }

    fn result<'js>(&self, ctx: &Ctx<'js>, main: &Promise<'js>, helpers: &Helpers<'js>) -> PassEnd {
        let value = match main.result::<Value>() {
            Some(Ok(v)) => v,
            _ => return PassEnd::Failed(self.caught(ctx, helpers, &self.prepared.normalized)),
        };
        match helpers.encode.call::<_, String>((value,)) {
            Ok(text) => match parse_sandbox_json(&text, "The result") {
                Ok(json) => PassEnd::Returned(json),
                Err(message) => PassEnd::Failed(message),
            },
            Err(_) => {
                if let Some(end) = self.stopped() {
                    return end;
                }
                PassEnd::Failed(format!(
                    "The result cannot be returned: {}",
                    self.caught(ctx, helpers, &self.prepared.normalized)
                ))
            }
        }
    }

    /// Settles the promise of host call `id` with the host's reply.
    fn settle<'js>(
        &self,
        ctx: &Ctx<'js>,
        state: &Rc<PassState<'js>>,
        helpers: &Helpers<'js>,
        id: u64,
        reply: HostReply,
    ) -> Result<(), PassEnd> {
        let Some((resolve, reject)) = state.resolvers.borrow_mut().remove(&id) else {
            return Ok(());
        };
        if !matches!(reply, HostReply::RunCode { .. }) {
            state.runs.borrow_mut().remove(&id);
        }
        let outcome: rquickjs::Result<()> = match reply {
            HostReply::Abort => {
                self.stop.set(Stop::Aborted);
                return Err(PassEnd::Aborted);
            }
            HostReply::Value(value) => self
                .to_js(ctx, helpers, &value)
                .and_then(|v| resolve.call::<_, ()>((v,))),
            HostReply::Throw(message) => Exception::from_message(ctx.clone(), &message)
                .and_then(|e| reject.call::<_, ()>((e,))),
            HostReply::RunCode { code, input } => {
                let chain = state.runs.borrow_mut().remove(&id).unwrap_or_default();
                let file = snippet_chain::file_name(&chain);
                match self
                    .cache
                    .prepare(&file, &code, self.options.max_code_bytes)
                {
                    Err(e) => Exception::from_message(
                        ctx.clone(),
                        &format!("the snippet cannot run: {e}"),
                    )
                    .and_then(|e| reject.call::<_, ()>((e,))),
                    Ok(snippet) => {
                        let started = self
                            .to_js(ctx, helpers, &input)
                            .and_then(|input| self.start(ctx, &snippet, &file, input));
                        match started {
                            Ok(promise) => resolve.call::<_, ()>((promise,)),
                            Err(_) => {
                                if let Some(end) = self.stopped() {
                                    return Err(end);
                                }
                                reject.call::<_, ()>((take_thrown(ctx),))
                            }
                        }
                    }
                }
            }
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(_) => match self.stopped() {
                Some(end) => Err(end),
                None => Err(PassEnd::Failed(self.caught(
                    ctx,
                    helpers,
                    &self.prepared.normalized,
                ))),
            },
        }
    }

    fn to_js<'js>(
        &self,
        ctx: &Ctx<'js>,
        helpers: &Helpers<'js>,
        value: &serde_json::Value,
    ) -> rquickjs::Result<Value<'js>> {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_string());
        let parsed = ctx.json_parse(text.as_str())?;
        if may_hold_envelope(&text) {
            helpers.revive.call((parsed,))
        } else {
            Ok(parsed)
        }
    }
}
