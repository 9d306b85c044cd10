//! One pass: a fresh runtime runs the model's code and answers its host calls.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use codemode::{
    ExecuteRequest, ExecuteResult, Host, HostCall, HostReply, Namespace, PassEnd, SDK_NAMESPACE,
};
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{
    qjs, Context, Ctx, Exception, FromJs, Function, Object, Promise, Runtime, TypedArray, Value,
};

use crate::caller::CallerThread;
use crate::compiled::{CodeCache, Prepared};
use crate::memory::{CountingAllocator, MemoryGauge};
use crate::normalize::{Normalized, CODE_FILE};
use crate::options::QuickJsOptions;
use crate::report::{describe, SNIPPET_FILE};
use crate::values::{decode_bytes, encode_bytes, may_hold_envelope};

const GLUE: &str = include_str!("glue.js");
/// The file name of the glue script in stack traces.
const GLUE_FILE: &str = "sandbox.js";
/// Where a fresh context keeps the compiled glue until the pass takes it (before any model code).
const GLUE_KEY: &str = "__codemode_glue";
/// The SDK methods, in the order their call ids follow the connector methods.
const SDK_METHODS: [&str; 6] = [
    "search",
    "describe",
    "step",
    "step_result",
    "step_error",
    "run",
];

/// A runtime and context made ahead of time; used for one pass, then dropped.
pub(crate) struct Fresh {
    runtime: Runtime,
    context: Context,
    memory: MemoryGauge,
    /// The connector namespaces already installed, if any.
    declared: Option<Arc<Vec<Namespace>>>,
}

impl Fresh {
    /// Creates a runtime with the limits of `options`, a context with the standard built-ins,
    /// and the glue script run from its bytecode, with `console`, the SDK and `namespaces`
    /// (already checked) installed. The pass binds the host before the model's code, and
    /// installs the namespaces itself if they were not known here.
    pub(crate) fn new(
        options: &QuickJsOptions,
        namespaces: Option<Arc<Vec<Namespace>>>,
    ) -> rquickjs::Result<Fresh> {
        let memory = MemoryGauge::default();
        let limit = options.memory_limit;
        let runtime = Runtime::new_with_alloc(CountingAllocator::new(memory.clone(), limit))?;
        // The allocator enforces `limit`; QuickJS's own check, a little higher, is a backstop.
        runtime.set_memory_limit(limit.saturating_add(limit / 8));
        runtime.set_max_stack_size(options.max_stack_size);
        let context = Context::full(&runtime)?;
        context.with(|ctx| -> rquickjs::Result<()> {
            let glue = match glue_bytecode() {
                Some(bytes) => load_glue(&ctx, bytes)?,
                None => ctx.eval_with_options(GLUE, script_options(GLUE_FILE))?,
            };
            let (b64encode, b64decode) = base64_functions(&ctx)?;
            // `console` and the SDK are installed now, off the pass's path; the helpers wait
            // in a global that the pass removes before any model code runs.
            let helpers: Object = glue.call((b64encode, b64decode, SDK_NAMESPACE))?;
            if let Some(namespaces) = &namespaces {
                let declare: Function = helpers.get("declare")?;
                declare.call::<_, ()>((namespace_spec(&ctx, namespaces)?,))?;
            }
            ctx.globals().set(GLUE_KEY, helpers)
        })?;
        Ok(Fresh {
            runtime,
            context,
            memory,
            declared: namespaces,
        })
    }

    /// Whether a pass over `namespaces` can use this runtime: it has none installed, or
    /// exactly that set (the same allocation, so the check costs no comparison).
    pub(crate) fn prepared_for(&self, namespaces: Option<&Arc<Vec<Namespace>>>) -> bool {
        match (&self.declared, namespaces) {
            (None, _) => true,
            (Some(declared), Some(n)) => Arc::ptr_eq(declared, n),
            (Some(_), None) => false,
        }
    }
}

/// The namespaces as the glue's `declare` takes them: `[[name, [[method, callId], …]], …]`,
/// with call ids numbered across all namespaces in order.
fn namespace_spec<'js>(
    ctx: &Ctx<'js>,
    namespaces: &[Namespace],
) -> rquickjs::Result<rquickjs::Array<'js>> {
    let spec = rquickjs::Array::new(ctx.clone())?;
    let mut id = 0usize;
    for (i, ns) in namespaces.iter().enumerate() {
        let methods = rquickjs::Array::new(ctx.clone())?;
        for (j, m) in ns.methods.iter().enumerate() {
            let pair = rquickjs::Array::new(ctx.clone())?;
            pair.set(0, m.as_str())?;
            pair.set(1, id)?;
            methods.set(j, pair)?;
            id += 1;
        }
        let entry = rquickjs::Array::new(ctx.clone())?;
        entry.set(0, ns.name.as_str())?;
        entry.set(1, methods)?;
        spec.set(i, entry)?;
    }
    Ok(spec)
}

/// The base64 functions the glue uses for `Uint8Array` envelopes.
fn base64_functions<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<(Function<'js>, Function<'js>)> {
    let b64encode = Function::new(ctx.clone(), |bytes: TypedArray<'js, u8>| {
        // SAFETY: the slice is copied before any JavaScript runs again.
        let text = unsafe { bytes.as_bytes() }.map(encode_bytes);
        text.unwrap_or_default()
    })?;
    let b64decode = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, text: String| -> rquickjs::Result<Value<'js>> {
            match decode_bytes(&text) {
                Some(bytes) => Ok(TypedArray::<u8>::new(ctx, bytes)?.into_value()),
                None => Ok(Value::new_null(ctx)),
            }
        },
    )?;
    Ok((b64encode, b64decode))
}

/// The glue script compiled to QuickJS bytecode, once per process: loading it in a fresh
/// context costs a fraction of compiling it there. `None` if compiling failed, in which case
/// every context compiles the source (and reports the error).
fn glue_bytecode() -> Option<&'static [u8]> {
    static BYTECODE: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    BYTECODE.get_or_init(compile_glue).as_deref()
}

fn compile_glue() -> Option<Vec<u8>> {
    let runtime = Runtime::new().ok()?;
    let context = Context::full(&runtime).ok()?;
    let source = CString::new(GLUE).ok()?;
    let file = CString::new(GLUE_FILE).ok()?;
    context.with(|ctx| {
        let raw = ctx.as_raw().as_ptr();
        let flags =
            qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
        // SAFETY: `source` is NUL-terminated and outlives the call; the compiled function is
        // owned by `compiled`, which frees it.
        let compiled = unsafe {
            Value::from_raw(
                ctx.clone(),
                qjs::JS_Eval(
                    raw,
                    source.as_ptr(),
                    GLUE.len() as _,
                    file.as_ptr(),
                    flags as i32,
                ),
            )
        };
        if compiled.is_exception() {
            let _ = ctx.catch();
            return None;
        }
        let mut len: qjs::size_t = 0;
        // SAFETY: `compiled` is a live value of this context; the buffer is copied, then freed
        // with the context's allocator.
        unsafe {
            let buf = qjs::JS_WriteObject(
                raw,
                &mut len,
                compiled.as_raw(),
                qjs::JS_WRITE_OBJ_BYTECODE as i32,
            );
            if buf.is_null() {
                let _ = ctx.catch();
                return None;
            }
            let bytes = std::slice::from_raw_parts(buf, len as usize).to_vec();
            qjs::js_free(raw, buf.cast());
            Some(bytes)
        }
    })
}

/// Runs the compiled glue script in `ctx`; its value is the glue function.
fn load_glue<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> rquickjs::Result<Function<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `bytes` was written by `JS_WriteObject` of this QuickJS build in this process;
    // `JS_ReadObject` copies what it needs, and `JS_EvalFunction` takes ownership of the
    // function it returns.
    let value = unsafe {
        let function = qjs::JS_ReadObject(
            raw,
            bytes.as_ptr(),
            bytes.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if qjs::JS_IsException(function) {
            return Err(rquickjs::Error::Exception);
        }
        Value::from_raw(ctx.clone(), qjs::JS_EvalFunction(raw, function))
    };
    if value.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    Function::from_js(ctx, value)
}

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
            _ => Stop::Running,
        }
    }
}

type Reply = (u64, HostReply);

/// What the JavaScript-facing functions share with the driver.
struct PassState<'js> {
    host: Arc<dyn Host>,
    calls: Vec<(String, String)>,
    next_id: Cell<u64>,
    resolvers: RefCell<HashMap<u64, (Function<'js>, Function<'js>)>>,
    in_flight: RefCell<FuturesUnordered<BoxFuture<'static, Reply>>>,
    logs: RefCell<Vec<String>>,
    log_bytes: Cell<usize>,
    stop: Arc<StopFlag>,
    max_console_bytes: usize,
}

/// Throws an error that no `catch` or `finally` in the sandbox can observe.
fn throw_uncatchable(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    match Exception::from_message(ctx.clone(), message) {
        Ok(error) => {
            // SAFETY: the context and the value belong to the same live runtime.
            unsafe { rquickjs::qjs::JS_SetUncatchableError(ctx.as_raw().as_ptr(), error.as_raw()) };
            error.throw()
        }
        Err(e) => e,
    }
}

impl<'js> PassState<'js> {
    fn call(&self, ctx: Ctx<'js>, id: usize, args: String) -> rquickjs::Result<Promise<'js>> {
        if self.stop.get() != Stop::Running {
            return Err(throw_uncatchable(&ctx, "the pass has stopped"));
        }
        let Some((namespace, method)) = self.calls.get(id) else {
            return Err(Exception::throw_type(&ctx, "unknown host call"));
        };
        let args: serde_json::Value = serde_json::from_str(&args)
            .map_err(|e| Exception::throw_type(&ctx, &format!("arguments are not JSON: {e}")))?;
        let call = HostCall {
            namespace: namespace.clone(),
            method: method.clone(),
            args,
        };
        let (promise, resolve, reject) = ctx.promise()?;
        let call_id = self.next_id.get();
        self.next_id.set(call_id + 1);
        let host = self.host.clone();
        self.in_flight.borrow_mut().push(Box::pin(async move {
            let reply = host.call(call).await;
            (call_id, reply)
        }));
        self.resolvers
            .borrow_mut()
            .insert(call_id, (resolve, reject));
        Ok(promise)
    }

    fn log(&self, ctx: Ctx<'js>, level: String, line: String) -> rquickjs::Result<()> {
        if self.stop.get() != Stop::Running {
            return Err(throw_uncatchable(&ctx, "the pass has stopped"));
        }
        let line = match level.as_str() {
            "warn" | "error" => format!("[{level}] {line}"),
            _ => line,
        };
        let used = self.log_bytes.get();
        if used + line.len() <= self.max_console_bytes {
            self.log_bytes.set(used + line.len());
            self.logs.borrow_mut().push(line);
            return Ok(());
        }
        let mut room = self.max_console_bytes.saturating_sub(used);
        while room > 0 && !line.is_char_boundary(room) {
            room -= 1;
        }
        let mut logs = self.logs.borrow_mut();
        if room > 0 {
            logs.push(line[..room].to_string());
        }
        logs.push(format!(
            "[console output truncated: more than {} bytes]",
            self.max_console_bytes
        ));
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
fn poll_reply(
    in_flight: &RefCell<FuturesUnordered<BoxFuture<'static, Reply>>>,
    waker: &Waker,
) -> Option<Reply> {
    let mut cx = TaskContext::from_waker(waker);
    match in_flight.borrow_mut().poll_next_unpin(&mut cx) {
        Poll::Ready(reply) => reply,
        Poll::Pending => None,
    }
}

fn wait_for_reply(
    in_flight: &RefCell<FuturesUnordered<BoxFuture<'static, Reply>>>,
    waker: &Waker,
    deadline: Instant,
    cancel: &AtomicBool,
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
        thread::park_timeout((deadline - now).min(Duration::from_millis(50)));
    }
}

fn failed(message: impl Into<String>, logs: Vec<String>) -> ExecuteResult {
    ExecuteResult {
        end: PassEnd::Failed(message.into()),
        logs,
    }
}

/// Runs one pass on the current thread, in `fresh`. The runtime is handed back, spent, so the
/// caller can send the result before paying for freeing it; it must never run code again.
pub(crate) fn run_pass(fresh: Fresh, job: PassJob) -> (ExecuteResult, Fresh) {
    let PassJob {
        request,
        host,
        handle,
        cancel,
        options,
        cache,
        inline,
    } = job;
    let caller = inline.then(|| Arc::new(CallerThread::new()));
    let prepared = match cache.prepare(CODE_FILE, &request.code, options.max_code_bytes) {
        Ok(p) => p,
        Err(e) => return (failed(e.to_string(), Vec::new()), fresh),
    };
    let deadline = Instant::now() + options.wall_time;
    let stop = Arc::new(StopFlag::default());
    {
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
            false
        })));
    }
    let _entered = handle.as_ref().map(|h| h.enter());
    let driver = Driver {
        declared: fresh.declared.is_some(),
        request: &request,
        prepared: &prepared,
        cache: &cache,
        caller: caller.as_deref(),
        options: &options,
        deadline,
        cancel: &cancel,
        stop: &stop,
    };
    let result = fresh.context.with(|ctx| driver.run(ctx, host));
    // Anything the model's code left queued never runs: the runtime is only freed from here on.
    fresh.runtime.set_interrupt_handler(Some(Box::new(|| true)));
    (result, fresh)
}

struct Driver<'a> {
    /// The fresh runtime already has the request's namespaces ([`crate::stock::Stock::take`]
    /// hands out only runtimes prepared for the request's set, or for none).
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
    stop: &'a Arc<StopFlag>,
}

/// The functions the glue script hands back.
struct Helpers<'js> {
    encode: Function<'js>,
    revive: Function<'js>,
    show: Function<'js>,
}

impl Driver<'_> {
    fn run<'js>(&self, ctx: Ctx<'js>, host: Arc<dyn Host>) -> ExecuteResult {
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
            in_flight: RefCell::new(FuturesUnordered::new()),
            logs: RefCell::new(Vec::new()),
            log_bytes: Cell::new(0),
            stop: self.stop.clone(),
            max_console_bytes: self.options.max_console_bytes,
        });
        let end = match self.install(&ctx, &state, sdk_base) {
            Ok(helpers) => self.drive(&ctx, &state, &helpers),
            Err(e) => PassEnd::Failed(format!("the sandbox could not start: {e}")),
        };
        state.resolvers.borrow_mut().clear();
        state.in_flight.borrow_mut().clear();
        let logs = std::mem::take(&mut *state.logs.borrow_mut());
        ExecuteResult { end, logs }
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
        bind.call::<_, ()>((host_fn, sink, sdk))?;
        Ok(Helpers {
            encode: helpers.get("encode")?,
            revive: helpers.get("revive")?,
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
        let thrown = ctx.catch();
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
        match self.stop.get() {
            Stop::Running => None,
            Stop::Aborted => Some(PassEnd::Aborted),
            Stop::Deadline => Some(limit(&format!(
                "Time limit: the code ran for more than {} ms and was stopped. Make fewer or smaller calls, avoid busy loops, and return sooner.",
                self.options.wall_time.as_millis()
            ))),
            Stop::Cancelled => Some(limit("The execution was cancelled by the caller.")),
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
        loop {
            while self.stop.get() == Stop::Running && ctx.execute_pending_job() {}
            if let Some(end) = self.stopped() {
                return end;
            }
            match main.state() {
                PromiseState::Resolved => return self.result(ctx, &main, helpers),
                PromiseState::Rejected => {
                    let _ = main.result::<Value>();
                    return PassEnd::Failed(self.caught(ctx, helpers, &self.prepared.normalized));
                }
                PromiseState::Pending => {}
            }
            if state.in_flight.borrow().is_empty() {
                return PassEnd::Failed(
                    "The code is waiting for a promise that nothing will ever settle (no host call is in flight; there are no timers in the sandbox). Await only connector and codemode calls, or promises built from them.".to_string(),
                );
            }
            let waited = match poll_reply(&state.in_flight, &waker) {
                Some(reply) => Waited::Reply(reply),
                None => {
                    let wait =
                        || wait_for_reply(&state.in_flight, &waker, self.deadline, self.cancel);
                    match self.caller {
                        Some(caller) => caller.blocking(wait),
                        None => wait(),
                    }
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
            Ok(text) => match serde_json::from_str(&text) {
                Ok(json) => PassEnd::Returned(json),
                Err(e) => PassEnd::Failed(format!("the result is not valid JSON: {e}")),
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
                match self
                    .cache
                    .prepare(SNIPPET_FILE, &code, self.options.max_code_bytes)
                {
                    Err(e) => Exception::from_message(
                        ctx.clone(),
                        &format!("the snippet cannot run: {e}"),
                    )
                    .and_then(|e| reject.call::<_, ()>((e,))),
                    Ok(snippet) => {
                        let started = self
                            .to_js(ctx, helpers, &input)
                            .and_then(|input| self.start(ctx, &snippet, SNIPPET_FILE, input));
                        match started {
                            Ok(promise) => resolve.call::<_, ()>((promise,)),
                            Err(_) => {
                                if let Some(end) = self.stopped() {
                                    return Err(end);
                                }
                                let thrown = ctx.catch();
                                reject.call::<_, ()>((thrown,))
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

fn script_options(file: &str) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = true;
    options.filename = Some(file.to_string());
    options
}
