//! The runtime each thread runs its passes in, put back as it was made after every pass.
//!
//! A thread's first pass makes a runtime and context with the glue run and the namespaces
//! installed, in an arena of its own ([`crate::arena`]), and copies the arena's used part out.
//! After each pass, once its caller has the result, every value of the pass is dropped and
//! the copy is put back: the next pass finds globals, built-ins, heap and allocator exactly as
//! they were made, for the cost of one copy instead of making and freeing a runtime. Only
//! `Math.random`'s state is new for each pass. A runtime that cannot be put back (a value of
//! the pass outlived it, or its random state was not found) is freed and made again.

use std::cell::RefCell;
use std::hash::{BuildHasher, RandomState};
use std::time::Instant;

use codemode::Namespace;

use crate::arena::Snapshot;
use crate::ffi;
use crate::fresh::Fresh;
use crate::globals::check_namespaces;
use crate::options::QuickJsOptions;

thread_local! {
    /// This thread's runtime, between passes.
    static SLOT: RefCell<Option<Slot>> = const { RefCell::new(None) };
}

/// What a runtime was made for: a pass with other settings or namespaces needs another.
#[derive(PartialEq)]
struct Made {
    memory_limit: usize,
    max_stack_size: usize,
    max_array_length: u64,
    namespaces: Vec<Namespace>,
}

impl Made {
    fn of(options: &QuickJsOptions, namespaces: &[Namespace]) -> Made {
        Made {
            memory_limit: options.memory_limit,
            max_stack_size: options.max_stack_size,
            max_array_length: options.max_array_length(),
            namespaces: namespaces.to_vec(),
        }
    }

    fn fits(&self, options: &QuickJsOptions, namespaces: &[Namespace]) -> bool {
        self.memory_limit == options.memory_limit
            && self.max_stack_size == options.max_stack_size
            && self.max_array_length == options.max_array_length()
            && self.namespaces == namespaces
    }
}

/// A runtime as made, and the copy that puts it back.
pub(crate) struct Slot {
    fresh: Fresh,
    /// The arena as made (`None`: the runtime serves one pass).
    snapshot: Option<Snapshot>,
    made: Made,
    /// Which runtime this is, of those made in the process.
    #[cfg(test)]
    serial: usize,
}

impl Slot {
    /// Makes a runtime for passes over `namespaces` (already checked). Namespaces that cannot
    /// be installed ahead are left to the pass, which reports why.
    fn make(options: &QuickJsOptions, namespaces: &[Namespace]) -> Result<Slot, String> {
        let fresh = Fresh::new(options, Some(namespaces))
            .or_else(|_| Fresh::new(options, None))
            .map_err(|e| format!("the sandbox could not be created: {e}"))?;
        let snapshot = fresh
            .random
            .is_some()
            .then(|| fresh.arena.snapshot(&fresh.memory));
        Ok(Slot {
            fresh,
            snapshot,
            made: Made::of(options, namespaces),
            #[cfg(test)]
            serial: {
                static MADE: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        })
    }

    /// This thread's runtime if it fits the pass, else a new one. It is out of the thread's
    /// keeping until [`Slot::put_back`], so a pass that runs another pass on the same thread
    /// (inline, through a host call) gets a runtime of its own.
    pub(crate) fn take(options: &QuickJsOptions, namespaces: &[Namespace]) -> Result<Slot, String> {
        let held = match SLOT.with(|cell| cell.borrow_mut().take()) {
            Some(slot) if slot.made.fits(options, namespaces) => return Ok(slot),
            other => other,
        };
        // Namespaces that cannot be installed cost the thread nothing it had.
        if let Err(e) = check_namespaces(namespaces) {
            if let Some(slot) = held {
                slot.keep();
            }
            return Err(e.to_string());
        }
        // The thread's runtime is freed before the new one is made.
        drop(held);
        Slot::make(options, namespaces)
    }

    /// Keeps this runtime for the thread's next pass (one kept by a pass run within this one
    /// is freed).
    fn keep(self) {
        let nested = SLOT.with(|cell| cell.borrow_mut().replace(self));
        drop(nested);
    }

    /// The runtime, ready for a pass: on this thread's stack (recorded here, once per pass,
    /// before any JavaScript runs), with `Math.random` seeded by `seed` (an execution's, the
    /// same for each of its passes) or, without one, by a new seed.
    pub(crate) fn ready(&self, seed: Option<u64>) -> &Fresh {
        self.fresh.context.with(|ctx| {
            ffi::update_stack_top(&ctx);
            if let Some(at) = self.fresh.random {
                // SAFETY: `at` was found in this context when it was made, and no pass runs.
                unsafe { ffi::reseed_random(&ctx, at, seed.unwrap_or_else(new_seed)) };
            }
        });
        &self.fresh
    }

    /// After a pass: puts the runtime back as made and keeps it for the thread's next pass
    /// when `clean` (every value of the pass dropped); otherwise frees it and makes another,
    /// here, off the caller's path.
    pub(crate) fn put_back(self, clean: bool, options: &QuickJsOptions) {
        let slot = match (&self.snapshot, clean) {
            (Some(snapshot), true) => {
                // SAFETY: the snapshot is of this arena, taken when the runtime was made; the
                // pass is over and `clean` says none of its values is left (the pass dropped
                // its handles and the glue's links to its functions; see `run_pass`).
                unsafe { self.fresh.arena.restore(snapshot, &self.fresh.memory) };
                Some(self)
            }
            _ => {
                let Slot { made, .. } = self;
                Slot::make(options, &made.namespaces).ok()
            }
        };
        if let Some(slot) = slot {
            slot.keep();
        }
    }

    /// How many bytes a restore copies (0: the runtime is not restored).
    #[cfg(test)]
    pub(crate) fn snapshot_len(&self) -> usize {
        self.snapshot.as_ref().map_or(0, Snapshot::len)
    }
}

/// A new seed for `Math.random`: SipHash under keys the system chose, over the time.
fn new_seed() -> u64 {
    thread_local! {
        static EPOCH: Instant = Instant::now();
    }
    let nanos = EPOCH.with(|e| e.elapsed().as_nanos());
    RandomState::new().hash_one(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(slot: &Slot, code: &str) -> String {
        slot.ready(None).context.with(|ctx| {
            ctx.eval::<rquickjs::Coerced<String>, _>(code)
                .map(|s| s.0)
                .unwrap_or_else(|e| format!("error: {e}"))
        })
    }

    #[test]
    fn a_runtime_is_put_back_as_made_and_kept_for_the_next_pass() {
        let options = QuickJsOptions::default();
        let slot = Slot::take(&options, &[]).unwrap();
        assert!(slot.snapshot_len() > 0, "the random state was not found");
        let serial = slot.serial;
        let made = eval(
            &slot,
            "Object.getOwnPropertyNames(globalThis).length + ':' + typeof x",
        );
        assert_eq!(
            eval(
                &slot,
                "globalThis.x = 1; Array.prototype.push = null; typeof x"
            ),
            "number"
        );
        slot.put_back(true, &options);
        let slot = Slot::take(&options, &[]).unwrap();
        assert_eq!(slot.serial, serial, "the runtime was made again");
        assert_eq!(
            eval(
                &slot,
                "Object.getOwnPropertyNames(globalThis).length + ':' + typeof x"
            ),
            made
        );
        assert_eq!(eval(&slot, "typeof [].push"), "function");
        // A pass that is not clean gets a new runtime.
        slot.put_back(false, &options);
        let slot = Slot::take(&options, &[]).unwrap();
        assert_ne!(slot.serial, serial);
        // A pass over namespaces that cannot be installed is refused and costs the thread's
        // runtime nothing.
        let serial = slot.serial;
        slot.put_back(true, &options);
        let bad = [Namespace {
            name: "not a name".into(),
            ..Default::default()
        }];
        assert!(Slot::take(&options, &bad).is_err());
        let slot = Slot::take(&options, &[]).unwrap();
        assert_eq!(slot.serial, serial);
        // Other settings get another runtime too.
        let other = QuickJsOptions::default().with_memory_limit(8 << 20);
        let serial = slot.serial;
        slot.put_back(true, &options);
        let slot = Slot::take(&other, &[]).unwrap();
        assert_ne!(slot.serial, serial);
    }
}
