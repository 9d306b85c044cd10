//! Every call into C the sandbox makes: QuickJS bytecode (compile, write, load), uncatchable
//! errors, typed-array bytes, the counting allocator, and the two system calls (stack bounds,
//! scheduling class). The rest of the crate is safe code over these functions.

use std::ffi::CString;

use rquickjs::allocator::{Allocator, RustAllocator};
use rquickjs::{qjs, Ctx, Exception, TypedArray, Value};

use crate::memory::MemoryGauge;

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
        qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(raw));
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
        qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(raw));
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

/// Rust's allocator, counting into a [`MemoryGauge`] and refusing what would pass its limit.
pub(crate) struct CountingAllocator {
    inner: RustAllocator,
    gauge: MemoryGauge,
    limit: usize,
}

impl CountingAllocator {
    /// An allocator holding at most `limit` bytes (0: no limit), counting into `gauge`.
    pub(crate) fn new(gauge: MemoryGauge, limit: usize) -> Self {
        CountingAllocator {
            inner: RustAllocator,
            gauge,
            limit,
        }
    }

    fn size_of(ptr: *mut u8) -> usize {
        if ptr.is_null() {
            return 0;
        }
        // SAFETY: every non-null pointer passed here was returned by `RustAllocator`.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

// SAFETY: every call is forwarded to `RustAllocator`, which upholds the contract; this type
// only counts and refuses.
unsafe impl Allocator for CountingAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.gauge.reserve(size, self.limit) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.alloc(size);
        self.gauge.add(Self::size_of(ptr));
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        if !self.gauge.reserve(count.saturating_mul(size), self.limit) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.calloc(count, size);
        self.gauge.add(Self::size_of(ptr));
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        self.gauge.sub(Self::size_of(ptr));
        // SAFETY: the caller passes a pointer this allocator returned.
        unsafe { self.inner.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        let old = Self::size_of(ptr);
        if new_size > old && !self.gauge.reserve(new_size - old, self.limit) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller passes a pointer this allocator returned.
        let new = unsafe { self.inner.realloc(ptr, new_size) };
        if !new.is_null() {
            self.gauge.sub(old);
            self.gauge.add(Self::size_of(new));
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        Self::size_of(ptr)
    }
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

/// Moves the calling thread to the idle scheduling class: it runs only when a CPU has
/// nothing else to do.
#[cfg(target_os = "linux")]
pub(crate) fn lower_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain system call on the calling thread with a valid parameter block.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
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

/// Moves the calling thread to the idle scheduling class where the system has one.
#[cfg(not(target_os = "linux"))]
pub(crate) fn lower_priority() {}
