//! Runtimes made and freed off the hot path.
//!
//! A pass takes a fresh runtime from the stock and hands the spent one back. One background
//! thread, at the lowest scheduling priority the system offers, keeps the stock filled (with
//! the connector namespaces of the latest pass already installed) and frees spent runtimes; it uses only CPU time that passes, connectors and the caller's own
//! threads leave idle. Under sustained load it may fall behind: a pass then makes its own
//! runtime, and a spent runtime is freed by the pass's thread once enough are waiting, so
//! memory stays bounded either way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use codemode::Namespace;

use crate::fresh::Fresh;
use crate::globals::check_namespaces;
use crate::options::QuickJsOptions;

/// How many fresh runtimes the stock keeps ready.
const READY_TARGET: usize = 4;
/// How many spent runtimes may wait to be freed before passes free their own.
const SPENT_LIMIT: usize = 8;

#[derive(Default)]
struct Shelves {
    ready: Vec<Fresh>,
    spent: Vec<Fresh>,
    /// The namespaces of the latest pass, installed in the runtimes made from now on.
    namespaces: Option<Arc<Vec<Namespace>>>,
}

/// Fresh runtimes, each used for one pass, and spent ones waiting to be freed.
pub(crate) struct Stock {
    shelves: Mutex<Shelves>,
    work: Condvar,
    closed: AtomicBool,
}

impl Stock {
    /// Starts the background thread and returns the stock it tends.
    pub(crate) fn start(options: Arc<QuickJsOptions>) -> Arc<Stock> {
        let stock = Arc::new(Stock {
            shelves: Mutex::new(Shelves::default()),
            work: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        let tended = stock.clone();
        let _ = thread::Builder::new()
            .name("codemode-sandbox-stock".into())
            .spawn(move || tended.tend(&options));
        stock
    }

    fn shelves(&self) -> MutexGuard<'_, Shelves> {
        self.shelves.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh runtime for a pass over `namespaces`: one made ahead of time, or a new one if
    /// none is ready. Namespaces not seen before are checked first, and the runtimes made from
    /// then on carry them. The background thread is woken only by [`Stock::discard`], which
    /// every pass calls once its caller has the result.
    pub(crate) fn take(
        &self,
        options: &QuickJsOptions,
        namespaces: &[Namespace],
    ) -> Result<Fresh, String> {
        let mut shelves = self.shelves();
        let known = shelves
            .namespaces
            .as_ref()
            .is_some_and(|n| n.as_slice() == namespaces);
        if !known {
            check_namespaces(namespaces).map_err(|e| e.to_string())?;
            // The connectors changed (or this is the first pass): ready runtimes made for
            // others are freed.
            let current = Arc::new(namespaces.to_vec());
            let Shelves {
                ready,
                spent,
                namespaces: latest,
            } = &mut *shelves;
            let (fit, stale): (Vec<Fresh>, Vec<Fresh>) = ready
                .drain(..)
                .partition(|f| f.prepared_for(Some(&current)));
            *ready = fit;
            spent.extend(stale);
            *latest = Some(current);
        }
        let fresh = shelves.ready.pop();
        drop(shelves);
        match fresh {
            Some(f) => Ok(f),
            None => Fresh::new(options, None)
                .map_err(|e| format!("the sandbox could not be created: {e}")),
        }
    }

    /// Hands back a spent runtime to be freed in the background (or here, if too many wait).
    pub(crate) fn discard(&self, spent: Fresh) {
        let mut shelves = self.shelves();
        if shelves.spent.len() >= SPENT_LIMIT || self.closed.load(Ordering::SeqCst) {
            drop(shelves);
            drop(spent);
            return;
        }
        shelves.spent.push(spent);
        drop(shelves);
        self.work.notify_one();
    }

    /// Stops the background thread; what it holds is freed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.work.notify_all();
    }

    fn tend(&self, options: &QuickJsOptions) {
        crate::ffi::lower_priority();
        loop {
            let chore = {
                let mut shelves = self.shelves();
                while shelves.ready.len() >= READY_TARGET
                    && shelves.spent.is_empty()
                    && !self.closed.load(Ordering::SeqCst)
                {
                    shelves = self.work.wait(shelves).unwrap_or_else(|p| p.into_inner());
                }
                if self.closed.load(Ordering::SeqCst) {
                    let Shelves { ready, spent, .. } = std::mem::take(&mut *shelves);
                    drop(shelves);
                    drop((ready, spent));
                    return;
                }
                // Freeing first returns memory before more is taken.
                match shelves.spent.pop() {
                    Some(spent) => Chore::Free(spent),
                    None => Chore::Make(shelves.namespaces.clone()),
                }
            };
            let namespaces = match chore {
                Chore::Free(spent) => {
                    drop(spent);
                    continue;
                }
                Chore::Make(namespaces) => namespaces,
            };
            // Namespaces that cannot be installed (a pass then reports why) are left to the pass.
            let made = Fresh::new(options, namespaces).or_else(|_| Fresh::new(options, None));
            match made {
                Ok(f) => {
                    let mut shelves = self.shelves();
                    if f.prepared_for(shelves.namespaces.as_ref()) {
                        shelves.ready.push(f);
                    } else {
                        // The connectors changed while it was made.
                        shelves.spent.push(f);
                    }
                }
                Err(_) => thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

/// What the background thread does next.
enum Chore {
    /// Free a spent runtime.
    Free(Fresh),
    /// Make a runtime with these namespaces installed.
    Make(Option<Arc<Vec<Namespace>>>),
}
