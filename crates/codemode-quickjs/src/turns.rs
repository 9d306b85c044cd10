//! Turns for long-running JavaScript, so that runaways never take every core.
//!
//! A CPU-bound pass cannot be pre-empted, only made to wait from its interrupt handler. A pass
//! whose JavaScript has run for [`LONG_AFTER`] without waiting on the host needs a *turn* to go
//! on: at most one fewer than the machine's cores hold one at once (at least one), the others
//! wait, asleep, in the order they asked. A turn is given up after [`QUANTUM`] when others
//! wait, and whenever the pass waits on the host. Short passes never ask, so with as many
//! runaways as cores a core stays free for them. Time spent waiting for a turn counts against
//! the pass's wall-time limit, which ends the wait.
//!
//! On a sandbox thread (which the pool owns), a pass holding a turn also runs at a lower CPU
//! priority (nice 10), so that short passes sharing its core go first. The thread's priority
//! is restored when the pass ends; where the system refuses that (lowering a nice value may
//! need a privilege), the thread is marked spent and the pool lets it end.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How long one stretch of JavaScript runs before the pass needs a turn.
pub(crate) const LONG_AFTER: Duration = Duration::from_millis(5);
/// How long a turn lasts while other passes wait for one.
pub(crate) const QUANTUM: Duration = Duration::from_millis(20);
/// How often a waiting pass wakes to check whether it should stop.
const CHECK_EVERY: Duration = Duration::from_millis(20);
/// The nice value of a sandbox thread while its pass holds a turn.
const LONG_PASS_NICE: i32 = 10;

thread_local! {
    /// Set when this thread's priority could not be restored after a long pass.
    static SPENT: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread's priority stayed lowered after a long pass: it should not run more.
pub(crate) fn thread_spent() -> bool {
    SPENT.with(Cell::get)
}

#[derive(Default)]
struct Queue {
    holders: usize,
    waiting: VecDeque<u64>,
    next_ticket: u64,
}

/// The turns of one process.
pub(crate) struct Turns {
    queue: Mutex<Queue>,
    changed: Condvar,
    limit: usize,
}

impl Turns {
    /// Turns for at most `limit` passes at once (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        Turns {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            limit: limit.max(1),
        }
    }

    /// The process's turns: one fewer than its cores.
    pub(crate) fn shared() -> &'static Turns {
        static TURNS: OnceLock<Turns> = OnceLock::new();
        TURNS.get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Turns::new(cores.saturating_sub(1))
        })
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a turn until `deadline` or until `stop` says so; whether one was taken.
    fn take(&self, deadline: Instant, stop: &dyn Fn() -> bool) -> bool {
        let mut queue = self.queue();
        if queue.waiting.is_empty() && queue.holders < self.limit {
            queue.holders += 1;
            return true;
        }
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push_back(ticket);
        loop {
            if queue.waiting.front() == Some(&ticket) && queue.holders < self.limit {
                queue.waiting.pop_front();
                queue.holders += 1;
                drop(queue);
                self.changed.notify_all();
                return true;
            }
            let now = Instant::now();
            if now >= deadline || stop() {
                queue.waiting.retain(|t| *t != ticket);
                drop(queue);
                self.changed.notify_all();
                return false;
            }
            let wait = (deadline - now).min(CHECK_EVERY);
            queue = self
                .changed
                .wait_timeout(queue, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn give_back(&self) {
        let mut queue = self.queue();
        queue.holders = queue.holders.saturating_sub(1);
        drop(queue);
        self.changed.notify_all();
    }

    fn others_wait(&self) -> bool {
        !self.queue().waiting.is_empty()
    }
}

/// One pass's claim on the turns; gives its turn back when dropped.
pub(crate) struct Turn {
    turns: &'static Turns,
    held: AtomicBool,
    /// Whether a long pass lowers its thread's priority (only on threads the pool owns).
    lower_priority: bool,
    /// Whether it did.
    lowered: AtomicBool,
    state: Mutex<TurnState>,
}

struct TurnState {
    /// When the current stretch of JavaScript began.
    stretch_started: Instant,
    /// When the turn held was taken.
    taken_at: Instant,
}

impl Turn {
    /// A pass starting its JavaScript now, holding no turn; `lower_priority` when it runs on
    /// a thread the pool owns.
    pub(crate) fn new(turns: &'static Turns, lower_priority: bool) -> Arc<Turn> {
        let now = Instant::now();
        Arc::new(Turn {
            turns,
            held: AtomicBool::new(false),
            lower_priority,
            lowered: AtomicBool::new(false),
            state: Mutex::new(TurnState {
                stretch_started: now,
                taken_at: now,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, TurnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// From the interrupt handler: takes or renews a turn once the stretch is long, waiting
    /// (through `wait`, which may move the thread's other work away first) while none is free.
    /// False when the pass should stop instead (its deadline passed, or `stop` said so).
    pub(crate) fn tick(
        &self,
        deadline: Instant,
        stop: &dyn Fn() -> bool,
        wait: &dyn Fn(&dyn Fn() -> bool) -> bool,
    ) -> bool {
        let now = Instant::now();
        let held = self.held.load(Ordering::Relaxed);
        {
            let state = self.state();
            if now.duration_since(state.stretch_started) < LONG_AFTER {
                return true;
            }
            if held && (now.duration_since(state.taken_at) < QUANTUM || !self.turns.others_wait()) {
                return true;
            }
        }
        if held {
            self.held.store(false, Ordering::Relaxed);
            self.turns.give_back();
        }
        let took = wait(&|| self.turns.take(deadline, stop));
        if took {
            self.held.store(true, Ordering::Relaxed);
            self.state().taken_at = Instant::now();
            if self.lower_priority && !self.lowered.swap(true, Ordering::Relaxed) {
                crate::ffi::set_thread_nice(LONG_PASS_NICE);
            }
        }
        took
    }

    /// Before the pass waits on the host: gives the turn back; the next stretch starts anew.
    pub(crate) fn pause(&self) {
        if self.held.swap(false, Ordering::Relaxed) {
            self.turns.give_back();
        }
    }

    /// After the pass waited on the host: its JavaScript starts a new stretch.
    pub(crate) fn resume(&self) {
        self.state().stretch_started = Instant::now();
    }

    /// On the pass's thread, once its JavaScript is over: gives the turn back and restores
    /// the thread's priority (or marks the thread spent).
    pub(crate) fn finish(&self) {
        self.pause();
        if self.lowered.swap(false, Ordering::Relaxed) && !crate::ffi::set_thread_nice(0) {
            SPENT.with(|s| s.set(true));
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.pause();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaked(limit: usize) -> &'static Turns {
        Box::leak(Box::new(Turns::new(limit)))
    }

    #[test]
    fn the_limit_holds_and_waiters_go_in_order() {
        let turns = leaked(1);
        let never = || false;
        let far = Instant::now() + Duration::from_secs(10);
        assert!(turns.take(far, &never));
        let near = Instant::now() + Duration::from_millis(30);
        assert!(
            !turns.take(near, &never),
            "no second turn while one is held"
        );
        assert!(Instant::now() >= near, "the wait lasted until the deadline");
        turns.give_back();
        assert!(turns.take(far, &never), "a turn given back can be taken");
        let stopped = turns.take(far, &|| true);
        assert!(!stopped, "a stop ends the wait");
        turns.give_back();
        assert_eq!(turns.queue().holders, 0);
        assert!(turns.queue().waiting.is_empty());
    }

    #[test]
    fn a_short_stretch_needs_no_turn_and_a_long_one_takes_and_returns_it() {
        let turns = leaked(1);
        let turn = Turn::new(turns, false);
        let far = Instant::now() + Duration::from_secs(10);
        let direct = |take: &dyn Fn() -> bool| take();
        assert!(turn.tick(far, &|| false, &direct));
        assert_eq!(turns.queue().holders, 0, "short: no turn taken");
        turn.state().stretch_started = Instant::now() - LONG_AFTER;
        assert!(turn.tick(far, &|| false, &direct));
        assert_eq!(turns.queue().holders, 1);
        turn.pause();
        assert_eq!(
            turns.queue().holders,
            0,
            "waiting on the host gives it back"
        );
        turn.resume();
        assert!(turn.tick(far, &|| false, &direct));
        assert_eq!(turns.queue().holders, 0, "a new stretch starts short");
        turn.state().stretch_started = Instant::now() - LONG_AFTER;
        assert!(turn.tick(far, &|| false, &direct));
        drop(turn);
        assert_eq!(
            turns.queue().holders,
            0,
            "dropping the pass's turn gives it back"
        );
    }
}
