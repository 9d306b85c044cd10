//! Runtimes made and freed off the hot path, on a quiet machine and on a busy one.
//!
//! A pass takes a fresh runtime from the stock and hands the spent one back. Two background
//! threads keep the stock filled (with the connector namespaces of the latest pass already
//! installed) and free spent runtimes:
//!
//! - the *idle* tender runs in the idle scheduling class (on Linux): it uses only CPU time
//!   nothing else wants, so on a quiet machine the stock costs the passes nothing;
//! - the *busy* tender runs at normal priority and works only while the stock runs dry (a pass
//!   found nothing ready in the last [`HELP_WINDOW`]): on a machine whose cores are all busy the
//!   idle tender gets no CPU at all, and this one gets its share like any other thread, so the
//!   runtimes are still made after a pass has answered rather than on the next one's path.
//!
//! When passes come faster than both can make runtimes, a pass makes its own, and a spent
//! runtime is freed by the pass's thread once enough are waiting, so memory stays bounded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use codemode::Namespace;

use crate::fresh::Fresh;
use crate::globals::check_namespaces;
use crate::options::QuickJsOptions;

/// How many fresh runtimes the stock keeps ready.
const READY_TARGET: usize = 4;
/// How many spent runtimes may wait to be freed before passes free their own.
const SPENT_LIMIT: usize = 8;
/// How long the busy tender keeps working after a pass last found the stock empty.
pub(crate) const HELP_WINDOW: Duration = Duration::from_secs(1);

/// Which of the two background threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tender {
    /// Idle scheduling class: always at work, using only spare CPU time.
    Idle,
    /// Normal priority: at work only while the stock runs dry.
    Busy,
}

#[derive(Default)]
struct Shelves {
    ready: Vec<Fresh>,
    spent: Vec<Fresh>,
    /// Runtimes being made by the tenders now.
    making: usize,
    /// The namespaces of the latest pass, installed in the runtimes made from now on.
    namespaces: Option<Arc<Vec<Namespace>>>,
    /// When a pass last found no runtime ready.
    dry_at: Option<Instant>,
    /// Whether each tender waits for work (and so needs a wake-up): idle, busy.
    waiting: (bool, bool),
}

impl Shelves {
    /// Whether the busy tender should be at work.
    fn dry_lately(&self) -> bool {
        self.dry_at.is_some_and(|at| at.elapsed() < HELP_WINDOW)
    }

    /// Whether there is anything to do: a spent runtime to free, or room for one more.
    fn has_chore(&self) -> bool {
        !self.spent.is_empty() || self.ready.len() + self.making < READY_TARGET
    }
}

/// Fresh runtimes, each used for one pass, and spent ones waiting to be freed.
pub(crate) struct Stock {
    shelves: Mutex<Shelves>,
    idle_work: Condvar,
    busy_work: Condvar,
    closed: AtomicBool,
}

impl Stock {
    /// Starts the two tenders and returns the stock they tend.
    pub(crate) fn start(options: Arc<QuickJsOptions>) -> Arc<Stock> {
        let stock = Arc::new(Stock {
            shelves: Mutex::new(Shelves::default()),
            idle_work: Condvar::new(),
            busy_work: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        for (tender, name) in [
            (Tender::Idle, "codemode-sandbox-stock"),
            (Tender::Busy, "codemode-sandbox-stock-busy"),
        ] {
            let tended = stock.clone();
            let options = options.clone();
            let _ = thread::Builder::new()
                .name(name.into())
                .spawn(move || tended.tend(tender, &options));
        }
        stock
    }

    fn shelves(&self) -> MutexGuard<'_, Shelves> {
        self.shelves.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the tenders that wait and have work: the idle one always, the busy one while the
    /// stock runs dry. Called with the shelves locked; the wake-ups cost a system call each.
    fn wake(&self, shelves: &mut Shelves) {
        if shelves.waiting.0 {
            shelves.waiting.0 = false;
            self.idle_work.notify_one();
        }
        if shelves.waiting.1 && shelves.dry_lately() {
            shelves.waiting.1 = false;
            self.busy_work.notify_one();
        }
    }

    /// A fresh runtime for a pass over `namespaces`: one made ahead of time, or a new one if
    /// none is ready (which sets the busy tender to work). Namespaces not seen before are
    /// checked first, and the runtimes made from then on carry them. The idle tender is woken
    /// by [`Stock::discard`], which every pass calls once its caller has the result.
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
                ..
            } = &mut *shelves;
            let (fit, stale): (Vec<Fresh>, Vec<Fresh>) = ready
                .drain(..)
                .partition(|f| f.prepared_for(Some(&current)));
            *ready = fit;
            spent.extend(stale);
            *latest = Some(current);
        }
        let fresh = shelves.ready.pop();
        if fresh.is_none() {
            shelves.dry_at = Some(Instant::now());
            self.wake(&mut shelves);
        }
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
        self.wake(&mut shelves);
    }

    /// Stops the tenders; what they hold is freed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.idle_work.notify_all();
        self.busy_work.notify_all();
    }

    /// The next chore of `tender`, waiting until there is one; `None` once the stock closed.
    fn next_chore(&self, tender: Tender) -> Option<Chore> {
        let mut shelves = self.shelves();
        loop {
            if self.closed.load(Ordering::SeqCst) {
                let taken = std::mem::take(&mut shelves.ready);
                let spent = std::mem::take(&mut shelves.spent);
                drop(shelves);
                drop((taken, spent));
                return None;
            }
            let on_duty = tender == Tender::Idle || shelves.dry_lately();
            if on_duty && shelves.has_chore() {
                break;
            }
            let condvar = match tender {
                Tender::Idle => {
                    shelves.waiting.0 = true;
                    &self.idle_work
                }
                Tender::Busy => {
                    shelves.waiting.1 = true;
                    &self.busy_work
                }
            };
            shelves = condvar.wait(shelves).unwrap_or_else(|p| p.into_inner());
        }
        // Freeing first returns memory before more is taken.
        Some(match shelves.spent.pop() {
            Some(spent) => Chore::Free(spent),
            None => {
                shelves.making += 1;
                Chore::Make(shelves.namespaces.clone())
            }
        })
    }

    fn tend(&self, tender: Tender, options: &QuickJsOptions) {
        if tender == Tender::Idle {
            crate::ffi::lower_priority();
        }
        while let Some(chore) = self.next_chore(tender) {
            let namespaces = match chore {
                Chore::Free(spent) => {
                    drop(spent);
                    continue;
                }
                Chore::Make(namespaces) => namespaces,
            };
            // Namespaces that cannot be installed (a pass then reports why) are left to the pass.
            let made = Fresh::new(options, namespaces).or_else(|_| Fresh::new(options, None));
            let mut shelves = self.shelves();
            shelves.making -= 1;
            match made {
                Ok(f) if f.prepared_for(shelves.namespaces.as_ref()) => shelves.ready.push(f),
                // The connectors changed while it was made.
                Ok(f) => shelves.spent.push(f),
                Err(_) => {
                    drop(shelves);
                    thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

/// What a tender does next.
enum Chore {
    /// Free a spent runtime.
    Free(Fresh),
    /// Make a runtime with these namespaces installed.
    Make(Option<Arc<Vec<Namespace>>>),
}
