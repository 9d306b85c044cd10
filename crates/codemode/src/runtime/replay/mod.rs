//! What a pass does with each connector call: the replay tables.
//!
//! A call's seq either has an entry in the execution's log, and the call is answered from
//! that entry ([`REPLAY_TABLE`], decided by [`replay`]), or has none, and the call is new and
//! its tool decides ([`FIRST_RUN_TABLE`], decided by [`first_run`]). Each table lists every
//! case of its input exactly once: the tables are checked when the crate compiles (a case no
//! row lists, a case two rows list, or a row that lists no case is a compile error) and each
//! is turned into one array of answers, so deciding costs an index, not a scan.
//! `cargo test -p codemode-core replay_tables -- --nocapture` prints every case with its answer.

mod cases;
mod divergence;
#[cfg(test)]
mod tests;

use crate::executor::HostCall;
use crate::model::{DecisionKind, LogEntry};
use crate::status::EntryState;
use cases::{first_index, recorded_index, FIRST_RUN_ROWS, REPLAY_ROWS};
pub(super) use divergence::Divergence;

/// What the log holds about a call at a seq it recorded: the input of [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Recorded {
    /// The call has the entry's connector, method and arguments (canonical JSON equality).
    pub same: bool,
    /// The entry's state.
    pub state: EntryState,
    /// The entry is of a `reexecute` tool: it keeps no result.
    pub ephemeral: bool,
    /// The last decision recorded on the entry, if any.
    pub last: Option<DecisionKind>,
}

/// What to do with a call the log recorded: the output of [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Replay {
    /// Give the code the recorded result; the connector does not run.
    ReturnResult,
    /// Throw the recorded error; the connector does not run.
    ThrowError,
    /// Record the person's rejection as the entry's error and throw it; nothing runs.
    ThrowRejection,
    /// Run the connector again, keeping no result (a `reexecute` tool runs on every pass).
    RunAgain,
    /// Mark the entry `executing`, commit, and run it, with the approved arguments if any.
    RunApproved,
    /// The entry was left `executing` (its node died or lost its lease while it ran): mark it
    /// again, commit, and run it again with the same idempotency key.
    RunInterrupted,
    /// A pending entry no person decided on (a pass that died before it paused committed it
    /// with a later write's mark): the call waits for a person again and the pass pauses on
    /// it; it never runs unapproved.
    ParkUndecided,
    /// End the run: this pass made another call at this seq than the one recorded.
    FailDiverged,
    /// End the run: a rollback reverted the entry, and a rolled-back run cannot run again.
    FailReverted,
}

/// What the tool says about a call at a seq the log has no entry for: the input of
/// [`first_run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FirstCall {
    /// The tool needs a person's approval (its policy or an override).
    pub approval: bool,
    /// A standing approval (scope `execution`) recorded on the execution covers the method.
    pub standing: bool,
    /// The tool's replay policy is `reexecute`: it runs on every pass and keeps no result.
    pub reexecute: bool,
    /// The tool is read-only: safe to run twice.
    pub read_only: bool,
}

/// What to do with a new call: the output of [`first_run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FirstRun {
    /// Record it `pending` and wait; the pass pauses once nothing else can progress.
    Pause,
    /// Record it with the standing approval that covers it, then run it as a write.
    RunCovered,
    /// A write: mark it `executing`, commit (with everything buffered before it), run it.
    RunWrite,
    /// Safe to run twice: run it, and record its outcome with the next commit.
    RunRead,
}

/// One question of a row: must the fact be true, false, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Is {
    /// The fact holds.
    Yes,
    /// The fact does not hold.
    No,
    /// Either.
    Any,
}

/// The cases of [`Recorded`] a row lists.
#[derive(Debug, Clone, Copy)]
pub(super) struct WhenRecorded {
    /// Whether the call is the one recorded.
    pub same: Is,
    /// The entry states listed.
    pub states: &'static [EntryState],
    /// Whether the entry is of a `reexecute` tool.
    pub ephemeral: Is,
    /// The last decisions listed (`None`: no decision).
    pub last: &'static [Option<DecisionKind>],
}

/// The cases of [`FirstCall`] a row lists.
#[derive(Debug, Clone, Copy)]
pub(super) struct WhenFirst {
    /// Whether the tool needs approval.
    pub approval: Is,
    /// Whether a standing approval covers it.
    pub standing: Is,
    /// Whether the tool is `reexecute`.
    pub reexecute: Is,
    /// Whether the tool is read-only.
    pub read_only: Is,
}

/// One row of a table: the cases it lists, what to do in them, and why.
#[derive(Debug, Clone, Copy)]
pub(super) struct Row<When, Then> {
    /// The cases.
    pub when: When,
    /// What to do.
    pub then: Then,
    /// Why, in a few words (printed by the tests, and the row's name in the coverage).
    #[cfg_attr(
        not(any(test, feature = "transition-coverage")),
        expect(dead_code, reason = "read by the tests and the coverage only")
    )]
    pub why: &'static str,
}

/// Every state an entry can be in.
const ANY_STATE: &[EntryState] = &EntryState::ALL;

/// Every last decision an entry can carry, and none.
pub(super) const ANY_DECISION: &[Option<DecisionKind>] = &[
    None,
    Some(DecisionKind::Approve),
    Some(DecisionKind::Reject),
    Some(DecisionKind::Rollback),
    Some(DecisionKind::Cancel),
];

/// What to do with a call the log recorded, in every case.
pub(super) const REPLAY_TABLE: &[Row<WhenRecorded, Replay>] = {
    use DecisionKind::{Approve, Cancel, Reject, Rollback};
    use EntryState::{Applied, Error, Executing, Pending, Reverted};
    use Is::{Any, No, Yes};
    &[
        Row {
            when: WhenRecorded {
                same: No,
                states: ANY_STATE,
                ephemeral: Any,
                last: ANY_DECISION,
            },
            then: Replay::FailDiverged,
            why: "the code called something else at this seq",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Applied],
                ephemeral: No,
                last: ANY_DECISION,
            },
            then: Replay::ReturnResult,
            why: "applied: its result is in the log",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Applied],
                ephemeral: Yes,
                last: ANY_DECISION,
            },
            then: Replay::RunAgain,
            why: "applied by a reexecute tool, which keeps no result",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Error],
                ephemeral: Any,
                last: ANY_DECISION,
            },
            then: Replay::ThrowError,
            why: "failed: its error is in the log",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Pending],
                ephemeral: Any,
                last: &[Some(Reject)],
            },
            then: Replay::ThrowRejection,
            why: "rejected while others of its batch were approved",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Pending],
                ephemeral: Any,
                last: &[Some(Approve)],
            },
            then: Replay::RunApproved,
            why: "approved",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Pending],
                ephemeral: Any,
                last: &[None, Some(Rollback), Some(Cancel)],
            },
            then: Replay::ParkUndecided,
            why: "pending, neither approved nor rejected",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Executing],
                ephemeral: Any,
                last: ANY_DECISION,
            },
            then: Replay::RunInterrupted,
            why: "left executing: its outcome is unknown",
        },
        Row {
            when: WhenRecorded {
                same: Yes,
                states: &[Reverted],
                ephemeral: Any,
                last: ANY_DECISION,
            },
            then: Replay::FailReverted,
            why: "reverted by a rollback",
        },
    ]
};

/// What to do with a new call, in every case.
pub(super) const FIRST_RUN_TABLE: &[Row<WhenFirst, FirstRun>] = {
    use Is::{Any, No, Yes};
    &[
        Row {
            when: WhenFirst {
                approval: Yes,
                standing: Yes,
                reexecute: Any,
                read_only: Any,
            },
            then: FirstRun::RunCovered,
            why: "needs approval, and a standing approval covers it",
        },
        Row {
            when: WhenFirst {
                approval: Yes,
                standing: No,
                reexecute: Any,
                read_only: Any,
            },
            then: FirstRun::Pause,
            why: "needs approval",
        },
        Row {
            when: WhenFirst {
                approval: No,
                standing: Any,
                reexecute: No,
                read_only: No,
            },
            then: FirstRun::RunWrite,
            why: "a write",
        },
        Row {
            when: WhenFirst {
                approval: No,
                standing: Any,
                reexecute: No,
                read_only: Yes,
            },
            then: FirstRun::RunRead,
            why: "read-only",
        },
        Row {
            when: WhenFirst {
                approval: No,
                standing: Any,
                reexecute: Yes,
                read_only: Any,
            },
            then: FirstRun::RunRead,
            why: "a reexecute tool runs on every pass anyway",
        },
    ]
};

/// What to do with a call the log recorded.
pub(super) fn replay(call: Recorded) -> Replay {
    let row = REPLAY_ROWS[recorded_index(call)];
    #[cfg(feature = "transition-coverage")]
    coverage::replay(row);
    REPLAY_TABLE[row as usize].then
}

/// What to do with a new call.
pub(super) fn first_run(call: FirstCall) -> FirstRun {
    let row = FIRST_RUN_ROWS[first_index(call)];
    #[cfg(feature = "transition-coverage")]
    coverage::first_run(row);
    FIRST_RUN_TABLE[row as usize].then
}

impl Recorded {
    /// The facts of `entry`, the entry at the seq `call` got.
    pub fn of(entry: &LogEntry, call: &HostCall) -> Recorded {
        Recorded {
            same: entry.connector == call.namespace
                && entry.method == call.method
                && crate::value::canonical_eq(&entry.args, &call.args),
            state: entry.state,
            ephemeral: entry.ephemeral,
            last: entry.decisions.last().map(|d| d.kind),
        }
    }
}

/// Which rows of the replay tables a process has used, for the test that proves the suite
/// exercises each (a flag per row: no lock on the call path).
#[cfg(feature = "transition-coverage")]
pub mod coverage {
    use super::{FIRST_RUN_TABLE, REPLAY_TABLE};
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};

    static REPLAY: [AtomicBool; REPLAY_TABLE.len()] =
        [const { AtomicBool::new(false) }; REPLAY_TABLE.len()];
    static FIRST_RUN: [AtomicBool; FIRST_RUN_TABLE.len()] =
        [const { AtomicBool::new(false) }; FIRST_RUN_TABLE.len()];

    pub(super) fn replay(row: u8) {
        if let Some(used) = REPLAY.get(usize::from(row)) {
            used.store(true, Ordering::Relaxed);
        }
    }

    pub(super) fn first_run(row: u8) {
        if let Some(used) = FIRST_RUN.get(usize::from(row)) {
            used.store(true, Ordering::Relaxed);
        }
    }

    /// The rows used so far in this process, by their `why`.
    pub fn used() -> BTreeSet<&'static str> {
        let replay = REPLAY_TABLE.iter().zip(&REPLAY).map(|(r, u)| (r.why, u));
        let first = FIRST_RUN_TABLE
            .iter()
            .zip(&FIRST_RUN)
            .map(|(r, u)| (r.why, u));
        replay
            .chain(first)
            .filter(|(_, used)| used.load(Ordering::Relaxed))
            .map(|(why, _)| why)
            .collect()
    }

    /// Every row of both tables, by its `why`.
    pub fn rows() -> BTreeSet<&'static str> {
        let replay = REPLAY_TABLE.iter().map(|r| r.why);
        replay
            .chain(FIRST_RUN_TABLE.iter().map(|r| r.why))
            .collect()
    }
}
