//! Runtimes made ahead of a pass: limits set, the glue script run (from bytecode compiled once
//! per process), `console`, the SDK and the connector namespaces installed.

use std::sync::{Arc, OnceLock};

use codemode::{Namespace, SDK_NAMESPACE};
use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, FromJs, Function, Object, Runtime, TypedArray, Value};

use crate::arena::{Arena, ArenaAllocator};
use crate::ffi::{self, Bytecode, RandomStateOffset, SourceText};
use crate::memory::MemoryGauge;
use crate::options::QuickJsOptions;
use crate::values::{decode_bytes, encode_bytes};

/// The glue script, with the value encoding (`values.js`) handed to it as `makeValues`.
const GLUE: &str = concat!(
    "(function (makeValues) { \"use strict\"; return (",
    include_str!("glue.js"),
    "); })(",
    include_str!("values.js"),
    ")"
);
/// The file name of the glue script in stack traces.
const GLUE_FILE: &str = "sandbox.js";
/// Where a fresh context keeps the compiled glue until the pass takes it (before any model code).
pub(crate) const GLUE_KEY: &str = "__codemode_glue";
/// A runtime and context as made, before any pass: in an arena of its own, so that it can be
/// put back this way after each pass (see [`crate::slot`]).
pub(crate) struct Fresh {
    /// The runtime, with the memory and stack limits set.
    pub runtime: Runtime,
    /// Its one context, with the glue run.
    pub context: Context,
    /// What the runtime holds, shared with the pass's interrupt handler.
    pub memory: MemoryGauge,
    /// Whether the pass's connector namespaces are installed already.
    pub declared: bool,
    /// The memory everything above lives in.
    pub arena: Arc<Arena>,
    /// Where its context keeps `Math.random`'s state (`None`: not found, so the runtime
    /// cannot be restored and serves one pass).
    pub random: Option<RandomStateOffset>,
}

impl Fresh {
    /// Creates a runtime with the limits of `options`, a context with the standard built-ins,
    /// and the glue script run from its bytecode, with `console`, the SDK and `namespaces`
    /// (already checked) installed. The pass binds the host before the model's code, and
    /// installs the namespaces itself if they were not known here.
    pub(crate) fn new(
        options: &QuickJsOptions,
        namespaces: Option<&[Namespace]>,
    ) -> rquickjs::Result<Fresh> {
        let memory = MemoryGauge::default();
        let limit = options.memory_limit;
        // Where the system refuses the roomy reservation (strict overcommit, a small
        // `ulimit -v`), a tighter one still holds the limit.
        let arena = arena_capacities(limit)
            .into_iter()
            .find_map(Arena::reserve)
            .ok_or(rquickjs::Error::Allocation)?;
        let allocator = ArenaAllocator::new(arena.clone(), memory.clone(), limit);
        let runtime = Runtime::new_with_alloc(allocator)?;
        // The allocator enforces `limit`, and marks the gauge whenever it refuses, so that the
        // pass ends even if the code catches what the engine throws. QuickJS's own limit stays
        // off: it would refuse a large request itself, before the allocator saw it, and the
        // code could catch that and go on.
        runtime.set_memory_limit(0);
        runtime.set_max_stack_size(options.max_stack_size);
        let clocks = (ffi::wall_micros(), ffi::monotonic_millis());
        let context = Context::full(&runtime)?;
        let random = context.with(|ctx| {
            let wall = (clocks.0, ffi::wall_micros());
            let mono = (clocks.1, ffi::monotonic_millis());
            ffi::locate_random_state(&ctx, wall, mono)
        });
        context.with(|ctx| -> rquickjs::Result<()> {
            let glue = match glue_bytecode() {
                Some(bytes) => load_glue(&ctx, bytes)?,
                None => ctx.eval_with_options(GLUE, script_options(GLUE_FILE))?,
            };
            let (b64encode, b64decode) = base64_functions(&ctx)?;
            // `console` and the SDK are installed now, off the pass's path; the helpers wait
            // in a global that the pass removes before any model code runs.
            let helpers: Object = glue.call((
                b64encode,
                b64decode,
                SDK_NAMESPACE,
                options.max_array_length() as f64,
            ))?;
            if let Some(namespaces) = namespaces {
                let declare: Function = helpers.get("declare")?;
                declare.call::<_, ()>((namespace_spec(&ctx, namespaces)?,))?;
            }
            ctx.globals().set(GLUE_KEY, helpers)
        })?;
        Ok(Fresh {
            runtime,
            context,
            memory,
            declared: namespaces.is_some(),
            arena,
            random,
        })
    }
}

/// The address space to reserve for a runtime of memory limit `limit`, roomiest first: four
/// times the limit, since blocks that grow leave gaps a larger block cannot use (pages are
/// taken only when written, and large freed blocks give theirs back); then one and a half
/// times the limit and a margin.
fn arena_capacities(limit: usize) -> Vec<usize> {
    if limit == 0 {
        // No limit: as much address space as a runtime could sensibly use, or what there is.
        return vec![64 << 30, 16 << 30, 4 << 30, 1 << 30];
    }
    vec![
        limit.saturating_mul(4).saturating_add(64 << 20),
        limit.saturating_add(limit / 2).saturating_add(16 << 20),
    ]
}

/// The namespaces as the glue's `declare` takes them: `[[name, [[method, callId], …]], …]`
/// (a positional method adds its parameter names and required count to its pair),
/// with call ids numbered across all namespaces in order.
pub(crate) fn namespace_spec<'js>(
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
            // A positional method: the property each argument sets, and how many are required.
            if let Some(Some(params)) = ns.positional.get(j) {
                pair.set(2, params.names.clone())?;
                pair.set(3, params.required)?;
            }
            methods.set(j, pair)?;
            id += 1;
        }
        let entry = rquickjs::Array::new(ctx.clone())?;
        entry.set(0, ns.name.as_str())?;
        entry.set(1, methods)?;
        if let Some(reason) = &ns.unavailable {
            entry.set(2, reason.as_str())?;
        }
        spec.set(i, entry)?;
    }
    Ok(spec)
}

/// The base64 functions the glue uses for `Uint8Array` envelopes.
fn base64_functions<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<(Function<'js>, Function<'js>)> {
    let b64encode = Function::new(ctx.clone(), |bytes: TypedArray<'js, u8>| {
        ffi::typed_array_bytes(&bytes)
            .map(|b| encode_bytes(&b))
            .unwrap_or_default()
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
fn glue_bytecode() -> Option<&'static Bytecode> {
    static BYTECODE: OnceLock<Option<Bytecode>> = OnceLock::new();
    BYTECODE.get_or_init(compile_glue).as_ref()
}

fn compile_glue() -> Option<Bytecode> {
    let runtime = Runtime::new().ok()?;
    let context = Context::full(&runtime).ok()?;
    context.with(
        |ctx| match ffi::compile(&ctx, GLUE, GLUE_FILE, SourceText::Dropped) {
            Ok(compiled) => compiled.bytecode,
            Err(_) => {
                let _ = ctx.catch();
                None
            }
        },
    )
}

/// Runs the compiled glue script in `ctx`; its value is the glue function.
fn load_glue<'js>(ctx: &Ctx<'js>, bytecode: &Bytecode) -> rquickjs::Result<Function<'js>> {
    let value = ffi::run_bytecode(ctx, bytecode)?;
    Function::from_js(ctx, value)
}

fn script_options(file: &str) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = true;
    options.filename = Some(file.to_string());
    options
}
