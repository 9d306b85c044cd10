//! The log as one pass sees it: where the pass is in it, what changed since the last commit,
//! and the per-execution bounds (calls, log bytes) it enforces.

use super::delivery::Delivery;
use super::replay::Divergence;
use crate::model::LogEntry;
use crate::status::{note_entry, EntryState};
use crate::tape::{ClockRun, ClockTape, StepMark};
pub(super) use crate::value::json_size;
use crate::value::{js_len, MAX_DURABLE_DEPTH, MAX_DURABLE_VALUE_CHARS};
use std::collections::BTreeMap;

/// Results buffered in memory past this many bytes are committed at once (reads are
/// otherwise buffered until the next write, pause or pass end).
pub(super) const FLUSH_BUFFERED_BYTES: u64 = 4 * 1024 * 1024;

/// Why the pass must stop.
#[derive(Debug, Clone)]
pub(super) enum Stop {
    /// Actions wait for approval at these seqs (every one waiting when the pass stopped).
    Pause(Vec<u64>),
    /// The execution fails with this message.
    Fail(String),
    /// The execution fails: the code made other calls than the log recorded.
    Diverged(Divergence),
    /// Someone cancelled the execution.
    Cancel(crate::model::Decision),
}

/// The per-execution bounds a pass enforces.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// The most seqs (calls and steps) one execution may use.
    pub max_calls: u64,
    /// The most bytes of args, results and errors one execution's log may hold.
    pub max_log_bytes: u64,
}

/// The log as this pass sees it, and where the pass is in it.
pub(super) struct ReplayCursor {
    /// Entries by seq: the recorded ones not yet replayed, then the ones this pass added and
    /// has not committed in a final state. A replayed or committed final entry is dropped:
    /// each seq is visited once per pass, so memory does not grow with the log.
    pub log: BTreeMap<u64, LogEntry>,
    /// Seqs whose entry changed since the last commit.
    dirty: Vec<u64>,
    /// Entries in a final state (applied, error) whose commit was refused: the pass's last
    /// commit carries them again, and a cancelled pass settles them (see `settle.rs`).
    unsaved: Vec<LogEntry>,
    /// The next seq to hand out.
    next: u64,
    /// Set once the pass must stop; every later call aborts.
    pub stop: Option<Stop>,
    /// Bytes the execution's log holds (args, results and errors as JSON).
    log_bytes: u64,
    /// Bytes of results changed since the last commit, held in memory until it.
    buffered_bytes: u64,
    limits: Limits,
    /// The order results reach the sandbox in (see [`Delivery`]).
    pub delivery: Delivery,
    /// The execution's clock tape: what earlier passes recorded, then this pass's readings.
    clock: ClockTape,
    /// Whether the tape changed since the last commit.
    clock_dirty: bool,
}

impl ReplayCursor {
    /// A cursor at the start of `log`, with the execution's clock tape.
    pub fn new(log: Vec<LogEntry>, clock: ClockTape, limits: Limits) -> Self {
        let log_bytes = log.iter().map(entry_bytes).sum();
        let delivery = Delivery::new(&log);
        ReplayCursor {
            log: log.into_iter().map(|e| (e.seq, e)).collect(),
            dirty: Vec::new(),
            unsaved: Vec::new(),
            next: 0,
            stop: None,
            log_bytes,
            buffered_bytes: 0,
            limits,
            delivery,
            clock,
            clock_dirty: false,
        }
    }

    /// The tape as the pass starts (before any reading of this pass).
    pub fn clock(&self) -> &ClockTape {
        &self.clock
    }

    /// Appends the readings the sandbox took, for the next commit.
    pub fn clock_readings(&mut self, runs: &[ClockRun]) {
        if runs.iter().any(|r| r.1 > 0) {
            self.clock.append(runs);
            self.clock_dirty = true;
        }
    }

    /// Records where a step's closure ended, for the next commit.
    pub fn step_mark(&mut self, mark: StepMark) {
        self.clock.set_mark(mark);
        self.clock_dirty = true;
    }

    /// The tape for a commit, when it changed since the last one.
    pub fn take_clock(&mut self) -> Option<ClockTape> {
        std::mem::take(&mut self.clock_dirty).then(|| self.clock.clone())
    }

    /// The tape goes with the next commit again (the one that carried it was refused).
    pub fn keep_clock(&mut self) {
        self.clock_dirty = true;
    }

    /// Hands out the next seq, or stops the pass (and returns `None`) past the call limit.
    pub fn next_seq(&mut self) -> Option<u64> {
        if self.next >= self.limits.max_calls {
            self.stop(Stop::Fail(format!(
                "call limit: this execution reached its limit of {} calls (connector calls and codemode.step; the runtime option max_calls). Make fewer calls: use a method that handles many items at once, filter on the server side, or split the work over several executions",
                self.limits.max_calls
            )));
            return None;
        }
        let seq = self.next;
        self.next += 1;
        Some(seq)
    }

    /// Counts `bytes` more into the log; past the log limit the pass stops and it says false.
    pub fn add_log_bytes(&mut self, bytes: u64) -> bool {
        self.log_bytes = self.log_bytes.saturating_add(bytes);
        if self.log_bytes <= self.limits.max_log_bytes {
            return true;
        }
        self.stop(Stop::Fail(format!(
            "log limit: this execution's log would hold {} bytes, over its limit of {} (the runtime option max_log_bytes); every call's arguments and result are kept for replay. Ask for less per call (fewer fields or items, a page, a server-side filter or summary), make fewer calls, or keep large data outside the execution and pass a small reference",
            self.log_bytes, self.limits.max_log_bytes
        )));
        false
    }

    /// Counts `bytes` more held in memory until the next commit.
    pub fn buffer(&mut self, bytes: u64) {
        self.buffered_bytes = self.buffered_bytes.saturating_add(bytes);
    }

    /// Whether enough is buffered that it should be committed now.
    pub fn needs_flush(&self) -> bool {
        self.buffered_bytes >= FLUSH_BUFFERED_BYTES
    }

    /// The changed entries for the pass's last commit, moved out of the log: no call reads
    /// the log once the sandbox has finished.
    /// Entries a refused commit carried come first, so that a later change of a seq wins.
    pub fn take_dirty_final(&mut self) -> Vec<LogEntry> {
        self.buffered_bytes = 0;
        let mut entries = std::mem::take(&mut self.unsaved);
        for seq in self.dirty_seqs() {
            entries.extend(self.log.remove(&seq));
        }
        entries
    }

    /// Keeps the entries in a final state of a commit that was refused or failed, for the
    /// pass's last commit: they record what connectors did. An `executing` mark is dropped:
    /// its write did not run, since its commit had to succeed first.
    pub fn keep_unsaved(&mut self, entries: Vec<LogEntry>) {
        self.unsaved.extend(
            entries
                .into_iter()
                .filter(|e| matches!(e.state, EntryState::Applied | EntryState::Error)),
        );
    }

    /// The changed entries for a commit during the pass: an entry in a final state (applied,
    /// error) is moved out, as this pass will not look at it again; others are copied.
    pub fn take_dirty(&mut self) -> Vec<LogEntry> {
        self.buffered_bytes = 0;
        let mut entries = Vec::new();
        for seq in self.dirty_seqs() {
            let done = self
                .log
                .get(&seq)
                .is_some_and(|e| matches!(e.state, EntryState::Applied | EntryState::Error));
            let entry = if done {
                self.log.remove(&seq)
            } else {
                self.log.get(&seq).cloned()
            };
            entries.extend(entry);
        }
        entries
    }

    /// The seqs changed since the last commit, in order, each once; the set is emptied.
    fn dirty_seqs(&mut self) -> Vec<u64> {
        let mut seqs = std::mem::take(&mut self.dirty);
        seqs.sort_unstable();
        seqs.dedup();
        seqs
    }

    /// Records `entry` and marks it for the next commit.
    pub fn set(&mut self, entry: LogEntry) {
        self.dirty.push(entry.seq);
        self.track(entry);
    }

    /// Changes the recorded entry `seq` in place and marks it for the next commit; a
    /// transition outside the table stops the pass (the entry keeps its change, as `set` does).
    pub fn update(&mut self, seq: u64, change: impl FnOnce(&mut LogEntry)) {
        let Some(entry) = self.log.get_mut(&seq) else {
            return;
        };
        let from = entry.state;
        change(entry);
        let to = entry.state;
        self.dirty.push(seq);
        self.check(seq, Some(from), to);
    }

    /// Records `entry` in memory only; a transition outside the table stops the pass.
    pub fn track(&mut self, entry: LogEntry) {
        let from = self.log.get(&entry.seq).map(|e| e.state);
        self.check(entry.seq, from, entry.state);
        self.log.insert(entry.seq, entry);
    }

    /// Notes the entry transition; one outside the table stops the pass.
    fn check(&mut self, seq: u64, from: Option<EntryState>, to: EntryState) {
        if !note_entry(from, to) {
            self.stop(Stop::Fail(format!(
                "internal error: log entry {seq} cannot go from {from:?} to {to}; the pass was stopped to keep the log consistent"
            )));
        }
    }

    /// Stops the pass with `stop`, unless it is already stopping.
    pub fn stop(&mut self, stop: Stop) {
        if self.stop.is_none() {
            self.stop = Some(stop);
            // Parked host futures see the stop and end.
            self.delivery.wake_all();
        }
    }
}

/// The bytes one entry adds to its execution's log.
fn entry_bytes(entry: &LogEntry) -> u64 {
    let result = entry.result.as_ref().map_or(0, |r| json_size(r).0);
    let error = entry.error.as_ref().map_or(0, |e| e.len() as u64);
    json_size(&entry.args).0 + result + error
}

/// The failure of a durable value (`what`) of `size` characters, over the limit.
pub(super) fn oversized(what: &str, size: usize) -> String {
    format!(
        "{what} is {size} characters serialised; one durable value may be at most {MAX_DURABLE_VALUE_CHARS}. Store the data elsewhere (a file, a bucket, a table) and pass a small reference such as its path or id"
    )
}

/// The failure of a durable value (`what`) nested past the depth the log can read back.
pub(super) fn too_deep(what: &str) -> String {
    format!(
        "{what} is nested more than {MAX_DURABLE_DEPTH} levels deep (arrays and objects inside each other), more than the log can keep; make it flatter, or pass the deep part as a JSON string"
    )
}

/// `text` cut to the durable value limit, with a note saying so when it was cut.
pub(crate) fn durable_text(text: String) -> String {
    let len = js_len(&text);
    if len <= MAX_DURABLE_VALUE_CHARS {
        return text;
    }
    let note = format!(
        "… [truncated: the message was {len} characters; at most {MAX_DURABLE_VALUE_CHARS} are kept]"
    );
    let budget = MAX_DURABLE_VALUE_CHARS - js_len(&note);
    let mut used = 0;
    let cut = text
        .char_indices()
        .find(|(_, c)| {
            used += c.len_utf16();
            used > budget
        })
        .map_or(text.len(), |(i, _)| i);
    let mut kept = text;
    kept.truncate(cut);
    kept.push_str(&note);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_to_the_limit_with_a_note() {
        let long = "é".repeat(MAX_DURABLE_VALUE_CHARS + 10);
        let cut = durable_text(long);
        assert_eq!(js_len(&cut), MAX_DURABLE_VALUE_CHARS);
        assert!(
            cut.ends_with("at most 1000000 are kept]"),
            "{}",
            &cut[cut.len() - 90..]
        );
        let short = "fine".to_string();
        assert_eq!(durable_text(short.clone()), short);
    }

    #[test]
    fn the_call_limit_stops_the_pass_naming_the_option() {
        let limits = Limits {
            max_calls: 2,
            max_log_bytes: 100,
        };
        let mut cursor = ReplayCursor::new(Vec::new(), ClockTape::default(), limits);
        assert_eq!(cursor.next_seq(), Some(0));
        assert_eq!(cursor.next_seq(), Some(1));
        assert_eq!(cursor.next_seq(), None);
        let Some(Stop::Fail(message)) = &cursor.stop else {
            panic!("no stop")
        };
        assert!(message.contains("limit of 2 calls"), "{message}");
        assert!(message.contains("max_calls"), "{message}");
    }

    #[test]
    fn the_log_limit_stops_the_pass_naming_the_option() {
        let limits = Limits {
            max_calls: 10,
            max_log_bytes: 100,
        };
        let mut cursor = ReplayCursor::new(Vec::new(), ClockTape::default(), limits);
        assert!(cursor.add_log_bytes(100));
        assert!(cursor.stop.is_none());
        assert!(!cursor.add_log_bytes(1));
        let Some(Stop::Fail(message)) = &cursor.stop else {
            panic!("no stop")
        };
        assert!(message.contains("101 bytes"), "{message}");
        assert!(message.contains("max_log_bytes"), "{message}");
    }
}
