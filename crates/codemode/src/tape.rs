//! Time and chance that replay: what `Date.now()`, `new Date()` and `Math.random()` return.
//!
//! A pass re-runs the code from the start, so code that branches on the time or on a random
//! number must see, on replay, what the pass that first ran that point saw. Two mechanisms:
//!
//! - **Clock readings are recorded** (the *tape*): every reading the sandbox takes is kept in
//!   order, and a later pass is handed the tape and reads it back, reading from the clock again
//!   only once it is used up. Equal readings in a row are one [`ClockRun`], so a busy loop
//!   costs one run per millisecond, not one per reading. New readings reach the host before the
//!   sandbox's next call ([`crate::Host::clock_readings`]) and are committed with the next
//!   commit: a write's `executing` mark at the latest, so anything a write depends on is
//!   durable before it runs.
//! - **`Math.random` is seeded per execution** ([`random_seed`]): every pass draws the same
//!   sequence, so nothing needs storing.
//!
//! A `codemode.step` closure runs in the first pass only; a [`StepMark`] records how many
//! readings and draws were taken when it ended, and a pass that replays the step skips to
//! there, so what comes after a step reads what it read the first time.

use serde::{Deserialize, Serialize};

/// Equal clock readings in a row: epoch milliseconds, and how many readings returned them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockRun(pub i64, pub u64);

/// Where a `codemode.step` closure ended in the pass that ran it: the step's seq, the clock
/// readings and the `Math.random` draws the pass had taken by then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepMark(pub u64, pub u64, pub u64);

/// An execution's recorded clock readings and step marks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockTape {
    /// Every clock reading of the execution, in the order the code took them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub now: Vec<ClockRun>,
    /// Where each step closure that ran ended, in the order they ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepMark>,
}

impl ClockTape {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.now.is_empty() && self.steps.is_empty()
    }

    /// How many readings the tape holds.
    pub fn readings(&self) -> u64 {
        self.now.iter().map(|r| r.1).sum()
    }

    /// Appends readings taken after those on the tape (a run equal to the last one joins it).
    pub fn append(&mut self, runs: &[ClockRun]) {
        for run in runs.iter().filter(|r| r.1 > 0) {
            match self.now.last_mut() {
                Some(last) if last.0 == run.0 => last.1 = last.1.saturating_add(run.1),
                _ => self.now.push(*run),
            }
        }
    }

    /// The mark of the step at `seq`, if its closure ran in an earlier pass.
    pub fn mark(&self, seq: u64) -> Option<StepMark> {
        self.steps.iter().rev().find(|m| m.0 == seq).copied()
    }

    /// Records where the step at `seq` ended (a mark already there is replaced).
    pub fn set_mark(&mut self, mark: StepMark) {
        self.steps.retain(|m| m.0 != mark.0);
        self.steps.push(mark);
    }

    /// The tape as JSON text, as the stores keep it (`None` when empty).
    pub fn to_json(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// The tape from a store's JSON text (absent: empty).
    pub fn from_json(text: Option<&str>) -> Result<Self, serde_json::Error> {
        text.map_or(Ok(ClockTape::default()), serde_json::from_str)
    }
}

/// What an executor replays in one pass: the recorded readings and `Math.random`'s seed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassClock {
    /// What earlier passes of the execution read.
    pub tape: ClockTape,
    /// The seed of `Math.random`, the same for every pass of an execution (`None`: a new one
    /// for each pass, for a host that never replays).
    pub random_seed: Option<u64>,
}

/// The `Math.random` seed of an execution: FNV-1a over its id, mixed (the same in every
/// release, so an upgrade replays the same draws).
pub fn random_seed(execution_id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in execution_id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // splitmix64's finaliser spreads ids that differ in one character over every bit.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (hash ^ (hash >> 31)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_readings_in_a_row_are_one_run() {
        let mut tape = ClockTape::default();
        tape.append(&[ClockRun(5, 2), ClockRun(5, 3), ClockRun(6, 1)]);
        tape.append(&[ClockRun(6, 4), ClockRun(7, 0)]);
        assert_eq!(tape.now, vec![ClockRun(5, 5), ClockRun(6, 5)]);
        assert_eq!(tape.readings(), 10);
    }

    #[test]
    fn a_tape_round_trips_through_json_and_empty_is_none() {
        assert_eq!(ClockTape::default().to_json(), None);
        assert_eq!(ClockTape::from_json(None).unwrap(), ClockTape::default());
        let mut tape = ClockTape::default();
        tape.append(&[ClockRun(1_700_000_000_000, 3)]);
        tape.set_mark(StepMark(2, 1, 4));
        tape.set_mark(StepMark(2, 2, 5));
        let text = tape.to_json().unwrap();
        assert_eq!(text, r#"{"now":[[1700000000000,3]],"steps":[[2,2,5]]}"#);
        assert_eq!(ClockTape::from_json(Some(&text)).unwrap(), tape);
        assert_eq!(tape.mark(2), Some(StepMark(2, 2, 5)));
        assert_eq!(tape.mark(3), None);
    }

    #[test]
    fn seeds_are_stable_and_differ_by_execution() {
        assert_eq!(random_seed("a"), random_seed("a"));
        assert_ne!(random_seed("a"), random_seed("b"));
        assert_ne!(random_seed(""), 0);
    }
}
