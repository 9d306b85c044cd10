//! The pass's wall clock as the code reads it (`Date.now()`, `new Date()`, `Date()`): the
//! readings earlier passes took, in order, then new ones (see `codemode::tape`).

use codemode::ClockRun;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where a pass is in its execution's clock tape, and the readings it took past the end.
#[derive(Debug, Default)]
pub(crate) struct PassClockState {
    /// The recorded readings.
    tape: Vec<ClockRun>,
    /// The run the next reading comes from.
    run: usize,
    /// Readings already taken from that run.
    used: u64,
    /// Readings taken this pass (replayed, skipped and new): the position on the tape.
    reads: u64,
    /// The latest reading handed out or recorded: a new reading is never earlier.
    last: i64,
    /// New readings not yet handed to the host.
    fresh: Vec<ClockRun>,
}

impl PassClockState {
    /// A clock that replays `tape` first.
    pub(crate) fn new(tape: &[ClockRun]) -> Self {
        PassClockState {
            last: tape.iter().map(|r| r.0).max().unwrap_or(i64::MIN),
            tape: tape.to_vec(),
            ..PassClockState::default()
        }
    }

    /// The next reading: the recorded one at this position, else the wall clock (never
    /// earlier than a reading the execution already saw), recorded as new.
    pub(crate) fn read(&mut self) -> i64 {
        self.reads += 1;
        if let Some(run) = self.tape.get(self.run) {
            let ms = run.0;
            self.used += 1;
            if self.used >= run.1 {
                self.run += 1;
                self.used = 0;
            }
            return ms;
        }
        let ms = wall_ms().max(self.last);
        self.last = ms;
        match self.fresh.last_mut() {
            Some(last) if last.0 == ms => last.1 += 1,
            _ => self.fresh.push(ClockRun(ms, 1)),
        }
        ms
    }

    /// How many readings the pass has taken (its position on the tape).
    pub(crate) fn position(&self) -> u64 {
        self.reads
    }

    /// Moves to position `reads` on the tape, where a replayed step's closure ended the first
    /// time (the closure does not run again, so its readings are passed over).
    pub(crate) fn skip_to(&mut self, reads: u64) {
        while self.reads < reads {
            let Some(run) = self.tape.get(self.run) else {
                return;
            };
            let n = (run.1 - self.used).min(reads - self.reads);
            self.used += n;
            self.reads += n;
            if self.used >= run.1 {
                self.run += 1;
                self.used = 0;
            }
        }
    }

    /// The new readings since the last call, for the host.
    pub(crate) fn take_fresh(&mut self) -> Vec<ClockRun> {
        std::mem::take(&mut self.fresh)
    }
}

/// The wall clock in epoch milliseconds.
fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tape_is_read_back_then_new_readings_are_recorded_never_earlier() {
        let far = wall_ms() + 3_600_000;
        let mut clock = PassClockState::new(&[ClockRun(far - 1, 2), ClockRun(far, 1)]);
        let read: Vec<i64> = (0..3).map(|_| clock.read()).collect();
        assert_eq!(read, vec![far - 1, far - 1, far]);
        assert!(clock.take_fresh().is_empty());
        // The wall clock is an hour behind the tape: new readings hold at the tape's last.
        assert_eq!(clock.read(), far);
        assert_eq!(clock.read(), far);
        assert_eq!(clock.take_fresh(), vec![ClockRun(far, 2)]);
        assert_eq!(clock.position(), 5);
    }

    #[test]
    fn a_skip_passes_over_readings_inside_and_across_runs() {
        let mut clock = PassClockState::new(&[ClockRun(1, 2), ClockRun(2, 3), ClockRun(3, 1)]);
        assert_eq!(clock.read(), 1);
        clock.skip_to(4);
        assert_eq!(clock.position(), 4);
        assert_eq!(clock.read(), 2);
        assert_eq!(clock.read(), 3);
        // Past the tape, a skip moves nowhere and readings are new.
        clock.skip_to(9);
        assert_eq!(clock.position(), 6);
        assert!(clock.read() >= 3);
        assert_eq!(clock.take_fresh().len(), 1);
    }
}
