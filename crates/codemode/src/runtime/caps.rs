//! Bounds on connector calls in flight: per connector and per execution, each call waiting
//! its turn in seq order; and a time limit per call of a connector.

use super::RuntimeBuilder;
use crate::error::RuntimeError;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The default most calls of one connector in flight at once in one execution.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 8;

/// The default most connector calls in flight at once in one execution.
pub const DEFAULT_MAX_IN_FLIGHT_PER_EXECUTION: usize = 32;

/// The configured bounds.
#[derive(Debug, Clone)]
pub(crate) struct Caps {
    /// Calls of one connector in flight at once, unless the connector has its own.
    pub max_in_flight: usize,
    /// Per-connector caps.
    pub per_connector: HashMap<String, usize>,
    /// Calls in flight at once in one execution, every connector together.
    pub per_execution: usize,
    /// Per-connector time limits of one call.
    pub timeouts: HashMap<String, Duration>,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            per_connector: HashMap::new(),
            per_execution: DEFAULT_MAX_IN_FLIGHT_PER_EXECUTION,
            timeouts: HashMap::new(),
        }
    }
}

impl Caps {
    /// Checks the bounds against the configured `connectors` and clamps each call timeout
    /// to the executor's pass `deadline`, which ends the pass (and its calls) anyway.
    pub fn checked(
        mut self,
        connectors: &[String],
        deadline: Option<Duration>,
    ) -> Result<Caps, RuntimeError> {
        let zero = |what: String| {
            RuntimeError::InvalidConfig(format!(
                "{what} is 0, which would let no call run; use at least 1"
            ))
        };
        if self.max_in_flight == 0 {
            return Err(zero("max_in_flight".into()));
        }
        if self.per_execution == 0 {
            return Err(zero("max_in_flight_per_execution".into()));
        }
        let named = self.per_connector.keys().chain(self.timeouts.keys());
        if let Some(unknown) = named.into_iter().find(|c| !connectors.contains(c)) {
            return Err(RuntimeError::InvalidConfig(format!(
                "a call bound names the connector {unknown:?}, which is not configured (configured: {})",
                connectors.join(", ")
            )));
        }
        if let Some((name, _)) = self.per_connector.iter().find(|(_, n)| **n == 0) {
            return Err(zero(format!("max_in_flight_for({name:?})")));
        }
        if let Some((name, _)) = self.timeouts.iter().find(|(_, t)| t.is_zero()) {
            return Err(RuntimeError::InvalidConfig(format!(
                "call_timeout_for({name:?}) is 0, which would fail every call; use at least 1 ms"
            )));
        }
        if let Some(deadline) = deadline {
            for timeout in self.timeouts.values_mut() {
                *timeout = (*timeout).min(deadline);
            }
        }
        Ok(self)
    }

    /// The cap of `connector`.
    fn cap(&self, connector: &str) -> usize {
        self.per_connector
            .get(connector)
            .copied()
            .unwrap_or(self.max_in_flight)
    }
}

impl RuntimeBuilder {
    /// The most calls of one connector in flight at once in one execution (default 8, at
    /// least 1); calls past it wait, in seq order.
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.caps.max_in_flight = calls;
        self
    }

    /// The most calls of `connector` in flight at once in one execution (at least 1).
    pub fn max_in_flight_for(mut self, connector: impl Into<String>, calls: usize) -> Self {
        self.caps.per_connector.insert(connector.into(), calls);
        self
    }

    /// The most connector calls in flight at once in one execution, every connector
    /// together (default 32, at least 1); calls past it wait, in seq order.
    pub fn max_in_flight_per_execution(mut self, calls: usize) -> Self {
        self.caps.per_execution = calls;
        self
    }

    /// How long one call of `connector` may take; past it the call fails with an error
    /// ("x.y did not answer within N ms"), logged and replayed like any failure. At most the
    /// executor's pass deadline (a longer one is clamped to it). Needs tokio's timer.
    pub fn call_timeout_for(mut self, connector: impl Into<String>, timeout: Duration) -> Self {
        self.caps.timeouts.insert(connector.into(), timeout);
        self
    }
}

/// The calls of one pass in flight and waiting, admitted in seq order within both caps.
pub(super) struct Gate {
    caps: Arc<Caps>,
    state: Mutex<GateState>,
}

/// A connector's name, shared by a call's entry, its place in the queue and its permit.
type ConnectorName = Arc<str>;

#[derive(Default)]
struct GateState {
    /// Calls waiting: seq -> (connector, waker of its future once polled).
    waiting: BTreeMap<u64, (ConnectorName, Option<Waker>)>,
    /// Calls admitted whose future has not yet taken its permit (a few at a time: ordered
    /// sets of so few cost less than hashing).
    admitted: BTreeSet<u64>,
    /// Calls in flight, by connector.
    running: BTreeMap<ConnectorName, usize>,
    /// Calls in flight in all.
    total: usize,
}

impl Gate {
    /// A gate with these caps.
    pub fn new(caps: Arc<Caps>) -> Arc<Gate> {
        Arc::new(Gate {
            caps,
            state: Mutex::new(GateState::default()),
        })
    }

    /// Queues the call at `seq` to `connector` at once; the future resolves to its permit
    /// when the call may run.
    pub fn enter(self: &Arc<Self>, seq: u64, connector: &str) -> Entry {
        let connector: ConnectorName = Arc::from(connector);
        let mut state = self.lock();
        state.waiting.insert(seq, (connector.clone(), None));
        self.admit(&mut state);
        Entry {
            gate: self.clone(),
            seq,
            connector,
            done: false,
        }
    }

    /// The time limit of one call of `connector`, if it has one.
    pub fn timeout(&self, connector: &str) -> Option<Duration> {
        self.caps.timeouts.get(connector).copied()
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits waiting calls in seq order: a call that the execution's cap stops stops all
    /// later ones; a call whose connector is full lets later calls of others go first.
    fn admit(&self, state: &mut GateState) {
        let GateState {
            waiting,
            admitted,
            running,
            total,
        } = state;
        let mut open = true;
        // Kept: every call from the first one the execution's cap stops.
        waiting.retain(|seq, (connector, waker)| {
            open = open && *total < self.caps.per_execution;
            if !open {
                return true;
            }
            let in_flight = running.entry(connector.clone()).or_default();
            if *in_flight >= self.caps.cap(connector) {
                return true;
            }
            *in_flight += 1;
            *total += 1;
            admitted.insert(*seq);
            if let Some(waker) = waker.take() {
                waker.wake();
            }
            false
        });
    }

    /// Frees the place of one call of `connector` and admits the next.
    fn release(&self, connector: &str) {
        let mut state = self.lock();
        if let Some(running) = state.running.get_mut(connector) {
            *running = running.saturating_sub(1);
        }
        state.total = state.total.saturating_sub(1);
        self.admit(&mut state);
    }
}

/// A call queued on the gate; resolves to its [`Permit`].
pub(super) struct Entry {
    gate: Arc<Gate>,
    seq: u64,
    connector: ConnectorName,
    done: bool,
}

impl Future for Entry {
    type Output = Permit;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit> {
        let gate = self.gate.clone();
        let mut state = gate.lock();
        if state.admitted.remove(&self.seq) {
            drop(state);
            self.done = true;
            return Poll::Ready(Permit {
                gate,
                connector: self.connector.clone(),
            });
        }
        if let Some((_, waker)) = state.waiting.get_mut(&self.seq) {
            *waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut state = self.gate.lock();
        if state.waiting.remove(&self.seq).is_some() {
            return;
        }
        if state.admitted.remove(&self.seq) {
            drop(state);
            self.gate.release(&self.connector);
        }
    }
}

/// A call's place in flight, freed when dropped.
pub(super) struct Permit {
    gate: Arc<Gate>,
    connector: ConnectorName,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate.release(&self.connector);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn gate(per_connector: usize, per_execution: usize) -> Arc<Gate> {
        Gate::new(Arc::new(Caps {
            max_in_flight: per_connector,
            per_execution,
            ..Caps::default()
        }))
    }

    #[test]
    fn calls_past_a_cap_wait_and_go_in_seq_order() {
        let g = gate(2, 32);
        let a = g.enter(0, "x").now_or_never().expect("first runs");
        let b = g.enter(1, "x").now_or_never().expect("second runs");
        let mut c = g.enter(2, "x");
        let mut d = g.enter(3, "x");
        let mut other = g.enter(4, "y");
        assert!(
            (&mut other).now_or_never().is_some(),
            "another connector goes first"
        );
        assert!((&mut d).now_or_never().is_none());
        assert!((&mut c).now_or_never().is_none());
        drop(a);
        assert!(
            (&mut d).now_or_never().is_none(),
            "seq 3 waits behind seq 2"
        );
        let c = (&mut c).now_or_never().expect("seq 2 runs next");
        drop(b);
        assert!((&mut d).now_or_never().is_some());
        drop(c);
    }

    #[test]
    fn the_execution_cap_holds_back_every_later_call() {
        let g = gate(8, 1);
        let a = g.enter(0, "x").now_or_never().expect("first runs");
        let mut b = g.enter(1, "y");
        assert!((&mut b).now_or_never().is_none());
        drop(a);
        assert!((&mut b).now_or_never().is_some());
    }

    #[test]
    fn a_dropped_waiter_gives_its_place_back() {
        let g = gate(1, 32);
        let a = g.enter(0, "x").now_or_never().expect("first runs");
        let b = g.enter(1, "x");
        let mut c = g.enter(2, "x");
        drop(a);
        drop(b);
        assert!(
            (&mut c).now_or_never().is_some(),
            "seq 1 gave its place to seq 2"
        );
    }

    #[test]
    fn zero_caps_and_unknown_connectors_are_refused_and_timeouts_clamped() {
        let names = vec!["x".to_string()];
        let bad = Caps {
            max_in_flight: 0,
            ..Caps::default()
        };
        assert!(bad.checked(&names, None).is_err());
        let mut bad = Caps::default();
        bad.per_connector.insert("x".into(), 0);
        let e = bad.checked(&names, None).unwrap_err().to_string();
        assert!(e.contains("max_in_flight_for(\"x\") is 0"), "{e}");
        let mut bad = Caps::default();
        bad.per_connector.insert("nope".into(), 2);
        assert!(bad.checked(&names, None).is_err());
        let mut long = Caps::default();
        long.timeouts.insert("x".into(), Duration::from_secs(600));
        let caps = long.checked(&names, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(caps.timeouts["x"], Duration::from_secs(60));
    }
}
