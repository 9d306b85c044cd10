//! The order in which results reach the sandbox, as Temporal replays a workflow's history.
//!
//! JavaScript is deterministic but for one thing: which of several calls in flight finishes
//! first. Every result the sandbox receives therefore gets a ticket, its position in the
//! execution's delivery order, recorded on its log entry (`delivered`). A host call's future
//! finishes only when its ticket is the smallest not yet delivered, so futures finish in
//! ticket order; the executor delivers each reply as its future finishes, one at a time, and
//! runs every job it causes before it polls again. A replay hands out the recorded tickets,
//! so every continuation runs in the recorded order and issues the same calls with the same
//! seqs; a live result gets the next ticket when it is recorded.
//!
//! The gate also sees when the pass can no longer progress: every host future the sandbox
//! holds is parked (waiting for its turn or for an approval) and none was woken since. Then
//! the pass pauses with every action waiting for approval, or, when none is, fails: the
//! result due next belongs to a call this pass never made (the replay diverged).

use crate::model::LogEntry;
use crate::status::EntryState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::task::Waker;

/// What a parked host future waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Its ticket to become the next to deliver.
    Turn(u64),
    /// A person's decision on the action at this seq (never within this pass).
    Approval,
}

/// The delivery order of one pass, and who is parked on it.
#[derive(Default)]
pub(super) struct Delivery {
    /// Tickets handed out (recorded or live) and not yet delivered.
    undelivered: BTreeSet<u64>,
    /// The ticket of each seq that has one (recorded in the log, or handed out this pass).
    tickets: HashMap<u64, u64>,
    /// Recorded tickets not yet delivered, to name the call due next.
    due: BTreeMap<u64, (u64, String)>,
    /// The next live ticket: past every recorded one.
    next_ticket: u64,
    /// Host futures made and not yet finished or dropped.
    outstanding: usize,
    /// Host futures parked since the last wake.
    parked: usize,
    /// Bumped by every wake; a future parked before it counts no more.
    epoch: u64,
    /// Actions waiting for approval, by seq.
    pub awaiting: Vec<u64>,
    /// Connector calls of this pass whose reply has not reached the sandbox: seq → name.
    unseen: BTreeMap<u64, Arc<str>>,
    /// The seq of each ticket handed out this pass and not yet delivered.
    seq_of: HashMap<u64, u64>,
    wakers: Vec<Waker>,
}

impl Delivery {
    /// The order recorded in `log`: the tickets of entries that reached the sandbox.
    pub fn new(log: &[LogEntry]) -> Self {
        let mut delivery = Delivery::default();
        for entry in log {
            let done = matches!(entry.state, EntryState::Applied | EntryState::Error);
            if let (true, Some(ticket)) = (done, entry.delivered) {
                delivery.tickets.insert(entry.seq, ticket);
                delivery.undelivered.insert(ticket);
                let name = format!("{}.{}", entry.connector, entry.method);
                delivery.due.insert(ticket, (entry.seq, name));
                delivery.next_ticket = delivery.next_ticket.max(ticket + 1);
            }
        }
        delivery
    }

    /// The ticket of the result at `seq`: the recorded one, else the next live one.
    pub fn ticket(&mut self, seq: u64) -> u64 {
        if let Some(ticket) = self.tickets.get(&seq) {
            self.seq_of.insert(*ticket, seq);
            return *ticket;
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.tickets.insert(seq, ticket);
        self.undelivered.insert(ticket);
        self.seq_of.insert(ticket, seq);
        ticket
    }

    /// Notes the connector call `name` at `seq`, made by the code: unseen until its reply
    /// is delivered.
    pub fn started(&mut self, seq: u64, name: Arc<str>) {
        self.unseen.insert(seq, name);
    }

    /// Notes that the reply of `ticket` reached the code.
    pub fn seen(&mut self, ticket: u64) {
        if let Some(seq) = self.seq_of.remove(&ticket) {
            self.unseen.remove(&seq);
        }
    }

    /// Forgets the call at `seq`: it waits for a person and never ran.
    pub fn forget(&mut self, seq: u64) {
        self.unseen.remove(&seq);
    }

    /// The connector calls whose reply never reached the sandbox, by seq, with their names.
    pub fn unseen(&self) -> &BTreeMap<u64, Arc<str>> {
        &self.unseen
    }

    /// Whether `ticket` is the next to deliver.
    pub fn is_turn(&self, ticket: u64) -> bool {
        self.undelivered.first() == Some(&ticket)
    }

    /// Marks `ticket` delivered and wakes every parked future.
    pub fn deliver(&mut self, ticket: u64) {
        self.undelivered.remove(&ticket);
        self.due.remove(&ticket);
        self.wake_all();
    }

    /// Counts a host future made.
    pub fn opened(&mut self) {
        self.outstanding += 1;
    }

    /// Counts a host future finished or dropped (parked at `epoch`, if at all) and wakes the
    /// parked ones, which may now be all there is.
    pub fn closed(&mut self, parked_at: Option<u64>) {
        self.unpark(parked_at);
        self.outstanding = self.outstanding.saturating_sub(1);
        self.wake_all();
    }

    /// Parks a future; says whether every outstanding future is now parked.
    pub fn park(&mut self, waker: &Waker) -> (u64, bool) {
        self.parked += 1;
        self.wakers.push(waker.clone());
        (self.epoch, self.parked >= self.outstanding)
    }

    /// Forgets a park from `epoch`, when it still counts.
    pub fn unpark(&mut self, parked_at: Option<u64>) {
        if parked_at == Some(self.epoch) {
            self.parked = self.parked.saturating_sub(1);
        }
    }

    /// Wakes every parked future: each counts as parked again only once polled again.
    pub fn wake_all(&mut self) {
        self.epoch += 1;
        self.parked = 0;
        for waker in self.wakers.drain(..) {
            waker.wake();
        }
    }

    /// The recorded call due next, when the pass is stuck without one: `(seq, name)`.
    pub fn due_next(&self) -> Option<(u64, &str)> {
        let first = self.undelivered.first()?;
        self.due.get(first).map(|(seq, name)| (*seq, name.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(seq: u64, delivered: Option<u64>) -> LogEntry {
        LogEntry {
            seq,
            connector: "shop".into(),
            method: "get".into(),
            args: json!({}),
            result: Some(json!(seq)),
            error: None,
            requires_approval: false,
            ephemeral: false,
            read_only: false,
            state: EntryState::Applied,
            approved_args: None,
            decisions: Vec::new(),
            delivered,
        }
    }

    #[test]
    fn recorded_tickets_come_in_their_order_and_live_ones_after_them() {
        let mut d = Delivery::new(&[entry(0, Some(2)), entry(1, Some(0)), entry(2, Some(1))]);
        assert_eq!(d.ticket(0), 2);
        assert_eq!(d.ticket(1), 0);
        assert!(d.is_turn(0) && !d.is_turn(2));
        d.deliver(0);
        assert!(d.is_turn(1));
        let live = d.ticket(7);
        assert_eq!(live, 3);
        assert_eq!(d.ticket(7), 3, "a seq keeps its ticket");
        d.deliver(1);
        d.deliver(2);
        assert!(d.is_turn(3));
    }

    #[test]
    fn a_call_is_unseen_until_its_reply_is_seen() {
        let mut d = Delivery::new(&[entry(0, Some(0))]);
        d.started(0, Arc::from("shop.get"));
        d.started(1, Arc::from("shop.put"));
        d.started(2, Arc::from("shop.list"));
        let replayed = d.ticket(0);
        let live = d.ticket(1);
        d.deliver(replayed);
        d.deliver(live);
        assert_eq!(
            d.unseen().len(),
            3,
            "delivered is not seen: the code may have settled"
        );
        d.seen(replayed);
        assert_eq!(
            d.unseen()
                .iter()
                .map(|(s, n)| (*s, &**n))
                .collect::<Vec<_>>(),
            [(1, "shop.put"), (2, "shop.list")],
            "a reply the code did not get, and a call with no reply yet, are unseen"
        );
        d.seen(live);
        assert_eq!(d.unseen().keys().copied().collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn stuck_only_when_every_outstanding_future_is_parked_since_the_last_wake() {
        let mut d = Delivery::new(&[entry(4, Some(0))]);
        let waker = futures::task::noop_waker();
        d.opened();
        d.opened();
        let (epoch, stuck) = d.park(&waker);
        assert!(!stuck);
        d.wake_all();
        d.unpark(Some(epoch));
        let (_, stuck) = d.park(&waker);
        assert!(!stuck, "the first park was forgotten by the wake");
        let (_, stuck) = d.park(&waker);
        assert!(stuck);
        assert_eq!(d.due_next(), Some((4, "shop.get")));
    }
}
