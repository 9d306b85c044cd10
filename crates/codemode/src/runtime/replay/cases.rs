//! The replay tables compiled into arrays of row numbers, one per case, when the crate
//! compiles. A case is a number: for [`FirstCall`], its four facts as bits; for [`Recorded`],
//! its facts in mixed radix. A case no row lists, a case two rows list, or a row that lists
//! no case stops the build here.

use super::{
    FirstCall, Is, Recorded, WhenFirst, WhenRecorded, ANY_DECISION, FIRST_RUN_TABLE, REPLAY_TABLE,
};
use crate::model::DecisionKind;
use crate::status::EntryState;

/// How many states an entry has (checked against `EntryState::ALL` below).
const STATES: usize = 5;
/// How many last decisions an entry can carry, none included.
const LASTS: usize = ANY_DECISION.len();
/// How many cases [`Recorded`] has.
pub(super) const RECORDED_CASES: usize = 2 * STATES * 2 * LASTS;
/// How many cases [`FirstCall`] has.
pub(super) const FIRST_CASES: usize = 16;

const _: () = assert!(EntryState::ALL.len() == STATES);

/// The place of `state` among the cases; a new state is a compile error here.
const fn state_index(state: EntryState) -> usize {
    match state {
        EntryState::Executing => 0,
        EntryState::Applied => 1,
        EntryState::Pending => 2,
        EntryState::Reverted => 3,
        EntryState::Error => 4,
    }
}

/// The place of a last decision among the cases; a new kind is a compile error here.
const fn last_index(last: Option<DecisionKind>) -> usize {
    match last {
        None => 0,
        Some(DecisionKind::Approve) => 1,
        Some(DecisionKind::Reject) => 2,
        Some(DecisionKind::Rollback) => 3,
        Some(DecisionKind::Cancel) => 4,
    }
}

pub(super) const fn recorded_index(call: Recorded) -> usize {
    let mut i = call.same as usize;
    i = i * STATES + state_index(call.state);
    i = i * 2 + call.ephemeral as usize;
    i * LASTS + last_index(call.last)
}

/// The case numbered `i` (the inverse of `recorded_index`).
pub(super) const fn recorded_case(i: usize) -> Recorded {
    Recorded {
        last: ANY_DECISION[i % LASTS],
        ephemeral: (i / LASTS) % 2 == 1,
        state: EntryState::ALL[(i / LASTS / 2) % STATES],
        same: i / LASTS / 2 / STATES == 1,
    }
}

pub(super) const fn first_index(call: FirstCall) -> usize {
    (call.approval as usize) << 3
        | (call.standing as usize) << 2
        | (call.reexecute as usize) << 1
        | call.read_only as usize
}

/// The case numbered `i` (the inverse of `first_index`).
pub(super) const fn first_case(i: usize) -> FirstCall {
    FirstCall {
        approval: i & 8 != 0,
        standing: i & 4 != 0,
        reexecute: i & 2 != 0,
        read_only: i & 1 != 0,
    }
}

const fn is(question: Is, fact: bool) -> bool {
    match question {
        Is::Yes => fact,
        Is::No => !fact,
        Is::Any => true,
    }
}

const fn lists_state(states: &[EntryState], state: EntryState) -> bool {
    let mut i = 0;
    while i < states.len() {
        if state_index(states[i]) == state_index(state) {
            return true;
        }
        i += 1;
    }
    false
}

const fn lists_last(lasts: &[Option<DecisionKind>], last: Option<DecisionKind>) -> bool {
    let mut i = 0;
    while i < lasts.len() {
        if last_index(lasts[i]) == last_index(last) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether a row lists the case `call`.
pub(super) const fn when_recorded(when: &WhenRecorded, call: Recorded) -> bool {
    is(when.same, call.same)
        && lists_state(when.states, call.state)
        && is(when.ephemeral, call.ephemeral)
        && lists_last(when.last, call.last)
}

/// Whether a row lists the case `call`.
pub(super) const fn when_first(when: &WhenFirst, call: FirstCall) -> bool {
    is(when.approval, call.approval)
        && is(when.standing, call.standing)
        && is(when.reexecute, call.reexecute)
        && is(when.read_only, call.read_only)
}

/// The row of each case of [`REPLAY_TABLE`]; refuses to compile unless each case has one.
pub(super) const REPLAY_ROWS: [u8; RECORDED_CASES] = {
    let table = REPLAY_TABLE;
    assert!(table.len() <= u8::MAX as usize);
    let mut rows = [0u8; RECORDED_CASES];
    let mut used = [false; REPLAY_TABLE.len()];
    let mut case = 0;
    while case < RECORDED_CASES {
        let call = recorded_case(case);
        assert!(recorded_index(call) == case);
        let mut found = None;
        let mut r = 0;
        while r < table.len() {
            if when_recorded(&table[r].when, call) {
                assert!(found.is_none(), "two rows of REPLAY_TABLE list one case");
                found = Some(r);
            }
            r += 1;
        }
        let Some(r) = found else {
            panic!("a case of Recorded is listed by no row of REPLAY_TABLE")
        };
        rows[case] = r as u8;
        used[r] = true;
        case += 1;
    }
    let mut r = 0;
    while r < table.len() {
        assert!(used[r], "a row of REPLAY_TABLE lists no case");
        r += 1;
    }
    rows
};

/// The row of each case of [`FIRST_RUN_TABLE`]; refuses to compile unless each case has one.
pub(super) const FIRST_RUN_ROWS: [u8; FIRST_CASES] = {
    let table = FIRST_RUN_TABLE;
    assert!(table.len() <= u8::MAX as usize);
    let mut rows = [0u8; FIRST_CASES];
    let mut used = [false; FIRST_RUN_TABLE.len()];
    let mut case = 0;
    while case < FIRST_CASES {
        let call = first_case(case);
        assert!(first_index(call) == case);
        let mut found = None;
        let mut r = 0;
        while r < table.len() {
            if when_first(&table[r].when, call) {
                assert!(found.is_none(), "two rows of FIRST_RUN_TABLE list one case");
                found = Some(r);
            }
            r += 1;
        }
        let Some(r) = found else {
            panic!("a case of FirstCall is listed by no row of FIRST_RUN_TABLE")
        };
        rows[case] = r as u8;
        used[r] = true;
        case += 1;
    }
    let mut r = 0;
    while r < table.len() {
        assert!(used[r], "a row of FIRST_RUN_TABLE lists no case");
        r += 1;
    }
    rows
};
