//! Every call into C the sandbox makes: QuickJS bytecode (compile, write, load), uncatchable
//! errors, typed-array bytes, a context's random state, and the system calls (stack bounds,
//! scheduling class, clock). The rest of the crate is safe code over these functions.

use std::ffi::CString;

use rquickjs::{qjs, Ctx, Exception, TypedArray, Value};

/// QuickJS bytecode written by [`compile`] in this process; only such bytecode is ever loaded.
#[derive(Debug)]
pub(crate) struct Bytecode(Vec<u8>);

fn is_exception(value: qjs::JSValue) -> bool {
    // SAFETY: reading a value's tag has no preconditions.
    unsafe { qjs::JS_VALUE_GET_TAG(value) == qjs::JS_TAG_EXCEPTION }
}

/// What compiling gave: the function, and its bytecode when it could be written.
pub(crate) struct Compiled<'js> {
    function: Value<'js>,
    /// The bytecode, for later contexts (`None` if writing it failed, out of memory say).
    pub bytecode: Option<Bytecode>,
}

/// Whether bytecode keeps the source text of its functions (what `Function.prototype.toString`
/// shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceText {
    /// Kept: the model's own functions print as written.
    Kept,
    /// Left out: smaller bytecode, faster to load; the functions print as native ones do.
    Dropped,
}

/// Compiles `source` as a strict global script named `file`, without running it; its bytecode
/// keeps or drops the source text as `kept` says. The source may hold NUL characters (QuickJS
/// is given its length). On `Err` the exception is pending in `ctx`.
pub(crate) fn compile<'js>(
    ctx: &Ctx<'js>,
    source: &str,
    file: &str,
    kept: SourceText,
) -> rquickjs::Result<Compiled<'js>> {
    let raw = ctx.as_raw().as_ptr();
    let mut text = Vec::with_capacity(source.len() + 1);
    text.extend_from_slice(source.as_bytes());
    text.push(0);
    let file = CString::new(file.replace('\0', ""))?;
    let flags =
        qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
    // SAFETY: `raw` is the live context of `ctx`, on its thread; `text` holds `source.len()`
    // bytes and a NUL after them, and both strings outlive the call. The function returned is
    // owned by `Value::from_raw` from then on.
    let function = unsafe {
        let function = qjs::JS_Eval(
            raw,
            text.as_ptr().cast(),
            source.len() as _,
            file.as_ptr(),
            flags as i32,
        );
        if is_exception(function) {
            return Err(rquickjs::Error::Exception);
        }
        Value::from_raw(ctx.clone(), function)
    };
    let mut len: qjs::size_t = 0;
    let write_flags = match kept {
        SourceText::Kept => qjs::JS_WRITE_OBJ_BYTECODE,
        SourceText::Dropped => qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE,
    };
    // SAFETY: `function` is a live value of this context; a non-null buffer of `len` bytes
    // is ours to copy, then free with `js_free`.
    let bytecode = unsafe {
        let buffer = qjs::JS_WriteObject(raw, &mut len, function.as_raw(), write_flags as i32);
        if buffer.is_null() {
            // The failed write's exception must not surface later.
            qjs::JS_FreeValue(raw, qjs::JS_GetException(raw));
            None
        } else {
            let bytes = std::slice::from_raw_parts(buffer, len as usize).to_vec();
            qjs::js_free(raw, buffer.cast());
            Some(Bytecode(bytes))
        }
    };
    Ok(Compiled { function, bytecode })
}

/// Runs a compiled script; its value. On `Err` the exception is pending in `ctx`.
pub(crate) fn run_compiled<'js>(compiled: Compiled<'js>) -> rquickjs::Result<Value<'js>> {
    let ctx = compiled.function.ctx().clone();
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: the function is a compiled function object of this live context; the reference
    // added here is the one `JS_EvalFunction` takes, and `compiled` frees its own.
    let value = unsafe {
        let function = qjs::JS_DupValue(raw, compiled.function.as_raw());
        qjs::JS_EvalFunction(raw, function)
    };
    if is_exception(value) {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: `value` is a fresh, owned value of this context.
    Ok(unsafe { Value::from_raw(ctx, value) })
}

/// Loads bytecode this process wrote and runs it; its value. On `Err` the exception is
/// pending in `ctx`.
pub(crate) fn run_bytecode<'js>(
    ctx: &Ctx<'js>,
    bytecode: &Bytecode,
) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: the bytes were written by `JS_WriteObject` of this QuickJS build in this process
    // (a `Bytecode` is made nowhere else); `JS_ReadObject` copies what it needs, and
    // `JS_EvalFunction` takes ownership of the function it returns.
    let value = unsafe {
        let function = qjs::JS_ReadObject(
            raw,
            bytecode.0.as_ptr(),
            bytecode.0.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if is_exception(function) {
            return Err(rquickjs::Error::Exception);
        }
        qjs::JS_EvalFunction(raw, function)
    };
    if is_exception(value) {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: `value` is a fresh, owned value of this context.
    Ok(unsafe { Value::from_raw(ctx.clone(), value) })
}

/// Throws `error` so that no `catch` or `finally` in the sandbox can observe it.
pub(crate) fn throw_uncatchable<'js>(ctx: &Ctx<'js>, error: Exception<'js>) -> rquickjs::Error {
    // SAFETY: the context and the value belong to the same live runtime.
    unsafe { qjs::JS_SetUncatchableError(ctx.as_raw().as_ptr(), error.as_raw()) };
    error.throw()
}

/// A copy of a `Uint8Array`'s bytes (`None` if its buffer was detached).
pub(crate) fn typed_array_bytes(array: &TypedArray<'_, u8>) -> Option<Vec<u8>> {
    // SAFETY: the slice is copied before any JavaScript runs again.
    unsafe { array.as_bytes() }.map(<[u8]>::to_vec)
}

/// Where QuickJS keeps a context's `Math.random` state: found once per process in a new
/// context ([`locate_random_state`]), then rewritten for each pass ([`reseed_random`]), so
/// that a restored context does not repeat the numbers of the pass before.
///
/// QuickJS seeds that state when it makes a context, from the wall clock in microseconds,
/// steps it once for the context's hash seed (stored just after it), and has stored the
/// `performance` time origin (monotonic milliseconds) just before it. The state is found by
/// all three, so nothing else in the context can be mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RandomStateOffset(usize);

/// The wall clock in microseconds, as QuickJS reads it to seed a context.
pub(crate) fn wall_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// The monotonic clock in milliseconds, as QuickJS reads it for `performance`.
#[cfg(unix)]
pub(crate) fn monotonic_millis() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as f64) * 1e3 + (t.tv_nsec as f64) / 1e6
}

/// The monotonic clock where the system has none this crate reads: never matches.
#[cfg(not(unix))]
pub(crate) fn monotonic_millis() -> f64 {
    f64::NAN
}

/// QuickJS's step of a context's random state.
fn xorshift(mut x: u64) -> u64 {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    x
}

/// Finds the random state of `ctx`, a context of an arena runtime made while the wall clock
/// read `wall` (µs, before and after) and the monotonic clock `mono` (ms, before and after),
/// before any `Math.random` call. `None` if it is not where QuickJS keeps it.
pub(crate) fn locate_random_state(
    ctx: &Ctx<'_>,
    wall: (u64, u64),
    mono: (f64, f64),
) -> Option<RandomStateOffset> {
    const MULTIPLIER: u64 = 0x2545_F491_4F6C_DD1D;
    // More than a second to make a context: too many candidates to be sure of.
    if wall.1 < wall.0 || wall.1 - wall.0 > 1_000_000 {
        return None;
    }
    let stepped: std::collections::HashSet<u64> = (wall.0..=wall.1)
        .map(|seed| xorshift(seed.max(1)))
        .collect();
    let raw = ctx.as_raw().as_ptr() as *const u8;
    // SAFETY: the context was allocated by the arena allocator, whose header holds its size.
    let size = unsafe { crate::arena::Arena::block_size(raw) };
    let mut offset = 8;
    while offset + 12 <= size {
        // SAFETY: `offset - 8 .. offset + 12` lies within the context's block; the reads are
        // unaligned-safe and of plain integers.
        let (origin, state, hash) = unsafe {
            (
                raw.add(offset - 8).cast::<f64>().read_unaligned(),
                raw.add(offset).cast::<u64>().read_unaligned(),
                raw.add(offset + 8).cast::<u32>().read_unaligned(),
            )
        };
        if stepped.contains(&state)
            && hash == state.wrapping_mul(MULTIPLIER) as u32
            && origin >= mono.0
            && origin <= mono.1
        {
            return Some(RandomStateOffset(offset));
        }
        offset += 8;
    }
    None
}

/// Gives `ctx`'s `Math.random` a new state: `seed` (0 is made 1, as QuickJS requires).
///
/// # Safety
/// `at` was found by [`locate_random_state`] in a context of this same QuickJS build, and
/// `ctx` is a live context of an arena runtime, not running.
pub(crate) unsafe fn reseed_random(ctx: &Ctx<'_>, at: RandomStateOffset, seed: u64) {
    let raw = ctx.as_raw().as_ptr() as *mut u8;
    // SAFETY: the caller vouches for the offset, which lies within the context's block.
    unsafe { raw.add(at.0).cast::<u64>().write_unaligned(seed.max(1)) };
}

/// Records the current thread's stack as the one `ctx`'s runtime runs on.
pub(crate) fn update_stack_top(ctx: &Ctx<'_>) {
    // SAFETY: `ctx` is a live context on this thread.
    unsafe { qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(ctx.as_raw().as_ptr())) };
}

/// The lowest address of the current thread's stack.
#[cfg(target_os = "linux")]
pub(crate) fn stack_low() -> Option<usize> {
    // SAFETY: `attr` is initialised by `pthread_getattr_np` before it is read and destroyed
    // once; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let found = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (found && !addr.is_null()).then_some(addr as usize)
    }
}

/// Sets the calling thread's nice value (alone: other threads keep theirs); whether it took.
/// Raising it always works; lowering it back may need a privilege the process lacks.
#[cfg(target_os = "linux")]
pub(crate) fn set_thread_nice(nice: i32) -> bool {
    // SAFETY: plain system calls on the calling thread.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0
    }
}

/// Sets the calling thread's nice value where the system allows it per thread.
#[cfg(not(target_os = "linux"))]
pub(crate) fn set_thread_nice(_nice: i32) -> bool {
    false
}
