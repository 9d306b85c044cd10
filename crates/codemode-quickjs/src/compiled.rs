//! Model code kept ready across passes: an approval or a resume runs the very code of the
//! pass before it, and a snippet runs the same code every time, so each is normalised and
//! compiled once. The second pass loads the compiled function instead of parsing again.
//!
//! The cache holds what this process made itself, in memory, and nothing the model can
//! reach: loading bytecode trusts it, so it is never read from anywhere else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rquickjs::{Ctx, FromJs, Function};

use crate::error::NormalizeError;
use crate::ffi::{self, Bytecode, SourceText};
use crate::normalize::{normalize, Normalized};

/// How many pieces of code the cache keeps (the least recently used goes first).
const CAPACITY: usize = 128;
/// Longer code is prepared for each pass and not kept.
const MAX_CACHED_CODE_BYTES: usize = 32 * 1024;

/// Model code made ready to run: normalised, and compiled once it first ran.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The runnable script and its position mapping.
    pub normalized: Normalized,
    /// The compiled script, as QuickJS bytecode, once a pass has compiled it.
    bytecode: OnceLock<Bytecode>,
}

impl Prepared {
    fn new(normalized: Normalized) -> Self {
        Prepared {
            normalized,
            bytecode: OnceLock::new(),
        }
    }

    /// Evaluates the script in `ctx` (as `file`) to its value, the outer function: from the
    /// bytecode when an earlier pass compiled it, else compiled now and the bytecode kept.
    /// On `Err` the exception is pending in `ctx`, as for `Ctx::eval`.
    pub fn evaluate<'js>(&self, ctx: &Ctx<'js>, file: &str) -> rquickjs::Result<Function<'js>> {
        let value = match self.bytecode.get() {
            Some(bytecode) => ffi::run_bytecode(ctx, bytecode)?,
            None => {
                let mut compiled =
                    ffi::compile(ctx, &self.normalized.source, file, SourceText::Kept)?;
                if let Some(bytecode) = compiled.bytecode.take() {
                    let _ = self.bytecode.set(bytecode);
                }
                ffi::run_compiled(compiled)?
            }
        };
        Function::from_js(ctx, value)
    }
}

struct Slot {
    prepared: Arc<Prepared>,
    used: u64,
}

#[derive(Default)]
struct Slots {
    by_code: HashMap<(String, String), Slot>,
    clock: u64,
}

/// The prepared form of recently run code, by script name and code.
#[derive(Default)]
pub(crate) struct CodeCache {
    slots: Mutex<Slots>,
}

impl CodeCache {
    /// `code` ready to run as `file`: the cached preparation, or a new one (kept unless the
    /// code is long). Code that does not normalise is an error, and is not kept.
    pub fn prepare(
        &self,
        file: &str,
        code: &str,
        max_code_bytes: usize,
    ) -> Result<Arc<Prepared>, NormalizeError> {
        let key = (file.to_string(), code.to_string());
        if let Some(found) = self.touch(&key) {
            return Ok(found);
        }
        let prepared = Arc::new(Prepared::new(normalize(code, max_code_bytes)?));
        if code.len() <= MAX_CACHED_CODE_BYTES {
            self.keep(key, prepared.clone());
        }
        Ok(prepared)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, key: &(String, String)) -> Option<Arc<Prepared>> {
        let mut slots = self.slots();
        slots.clock += 1;
        let now = slots.clock;
        let slot = slots.by_code.get_mut(key)?;
        slot.used = now;
        Some(slot.prepared.clone())
    }

    fn keep(&self, key: (String, String), prepared: Arc<Prepared>) {
        let mut slots = self.slots();
        if slots.by_code.len() >= CAPACITY && !slots.by_code.contains_key(&key) {
            let oldest = slots
                .by_code
                .iter()
                .min_by_key(|(_, slot)| slot.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                slots.by_code.remove(&oldest);
            }
        }
        slots.clock += 1;
        let used = slots.clock;
        slots.by_code.insert(key, Slot { prepared, used });
    }

    /// How many pieces of code are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots().by_code.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recently_used_and_drops_the_oldest() {
        let cache = CodeCache::default();
        let first = cache.prepare("code.js", "async () => 0", 1 << 20).unwrap();
        let second = cache.prepare("code.js", "async () => 1", 1 << 20).unwrap();
        for i in 2..CAPACITY {
            cache
                .prepare("code.js", &format!("async () => {i}"), 1 << 20)
                .unwrap();
        }
        let again = cache.prepare("code.js", "async () => 0", 1 << 20).unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "a hit returns the kept preparation"
        );
        cache
            .prepare("code.js", "async () => 'new'", 1 << 20)
            .unwrap();
        assert_eq!(cache.len(), CAPACITY);
        let still = cache.prepare("code.js", "async () => 0", 1 << 20).unwrap();
        assert!(
            Arc::ptr_eq(&first, &still),
            "the recently used one was kept"
        );
        let remade = cache.prepare("code.js", "async () => 1", 1 << 20).unwrap();
        assert!(
            !Arc::ptr_eq(&second, &remade),
            "the least recently used one was dropped"
        );
        assert_eq!(cache.len(), CAPACITY);
        let other_file = cache
            .prepare("snippet.js", "async () => 0", 1 << 20)
            .unwrap();
        assert!(
            !Arc::ptr_eq(&first, &other_file),
            "the script name is part of the key"
        );
    }

    #[test]
    fn the_first_evaluation_keeps_bytecode_that_a_later_context_runs() {
        let cache = CodeCache::default();
        let prepared = cache
            .prepare("code.js", "return input * 3", 1 << 20)
            .unwrap();
        let run = |input: i32| {
            let runtime = rquickjs::Runtime::new().unwrap();
            let context = rquickjs::Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let outer = prepared.evaluate(&ctx, "code.js").unwrap();
                let inner: Function = outer.call((input,)).unwrap();
                let promise: rquickjs::Promise = inner.call(()).unwrap();
                promise.finish::<i32>().unwrap()
            })
        };
        assert!(prepared.bytecode.get().is_none());
        assert_eq!(run(2), 6);
        assert!(
            prepared.bytecode.get().is_some(),
            "compiling kept the bytecode"
        );
        assert_eq!(run(5), 15, "the bytecode, loaded in a new runtime");
    }

    #[test]
    fn a_syntax_error_is_an_exception_and_keeps_no_bytecode() {
        let cache = CodeCache::default();
        // Parses as JavaScript for the normaliser, but QuickJS refuses it (a duplicate
        // `__proto__` in one object literal).
        let prepared = cache
            .prepare("code.js", "return { __proto__: 1, __proto__: 2 }", 1 << 20)
            .unwrap();
        let runtime = rquickjs::Runtime::new().unwrap();
        let context = rquickjs::Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let err = prepared.evaluate(&ctx, "code.js").unwrap_err();
            assert!(matches!(err, rquickjs::Error::Exception), "{err:?}");
            let thrown = ctx.catch();
            assert!(
                format!("{thrown:?}").contains("duplicate __proto__"),
                "{thrown:?}"
            );
        });
        assert!(prepared.bytecode.get().is_none());
    }

    #[test]
    fn bad_and_long_code_is_not_kept() {
        let cache = CodeCache::default();
        assert!(cache.prepare("code.js", "async () => {", 1 << 20).is_err());
        let long = format!(
            "async () => {{ /* {} */ return 1 }}",
            "x".repeat(MAX_CACHED_CODE_BYTES)
        );
        cache.prepare("code.js", &long, 1 << 20).unwrap();
        assert_eq!(cache.len(), 0);
    }
}
