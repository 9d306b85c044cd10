//! Every case of the replay tables, walked and printed; the contract's sentences checked
//! against them.

use super::cases::{when_first, when_recorded, FIRST_CASES, RECORDED_CASES};
use super::*;

fn every_recorded() -> Vec<Recorded> {
    let mut all = Vec::new();
    for same in [false, true] {
        for state in EntryState::ALL {
            for ephemeral in [false, true] {
                for &last in ANY_DECISION {
                    all.push(Recorded {
                        same,
                        state,
                        ephemeral,
                        last,
                    });
                }
            }
        }
    }
    all
}

fn every_first() -> Vec<FirstCall> {
    let mut all = Vec::new();
    for approval in [false, true] {
        for standing in [false, true] {
            for reexecute in [false, true] {
                for read_only in [false, true] {
                    all.push(FirstCall {
                        approval,
                        standing,
                        reexecute,
                        read_only,
                    });
                }
            }
        }
    }
    all
}

fn yes_no(fact: bool, yes: &'static str, no: &'static str) -> &'static str {
    if fact {
        yes
    } else {
        no
    }
}

/// Walks every case of both tables (built here, not from the tables' numbering), checks
/// that exactly one row lists it and that the decision is that row's, and prints the
/// cases: `cargo test -p codemode-core replay_tables -- --nocapture`.
#[test]
fn replay_tables_decide_every_case_by_its_one_row() {
    let recorded = every_recorded();
    assert_eq!(recorded.len(), RECORDED_CASES);
    println!(
        "A call the log recorded at its seq ({} cases):",
        recorded.len()
    );
    for call in recorded {
        let rows: Vec<_> = REPLAY_TABLE
            .iter()
            .filter(|r| when_recorded(&r.when, call))
            .collect();
        let [row] = rows.as_slice() else {
            panic!("{call:?} is listed by {} rows", rows.len())
        };
        assert_eq!(replay(call), row.then, "{call:?}");
        let last = call.last.map_or("none".into(), |k| format!("{k:?}"));
        println!(
            "  {:<9} {:<9} {:<9} last {:<8} -> {:<14} {}",
            yes_no(call.same, "same call", "other"),
            call.state.as_str(),
            yes_no(call.ephemeral, "ephemeral", "kept"),
            last.to_lowercase(),
            format!("{:?}", row.then),
            row.why
        );
    }
    let first = every_first();
    assert_eq!(first.len(), FIRST_CASES);
    println!("A new call ({} cases):", first.len());
    for call in first {
        let rows: Vec<_> = FIRST_RUN_TABLE
            .iter()
            .filter(|r| when_first(&r.when, call))
            .collect();
        let [row] = rows.as_slice() else {
            panic!("{call:?} is listed by {} rows", rows.len())
        };
        assert_eq!(first_run(call), row.then, "{call:?}");
        println!(
            "  {:<11} {:<11} {:<9} {:<9} -> {:<10} {}",
            yes_no(call.approval, "approval", "no approval"),
            yes_no(call.standing, "standing", "no standing"),
            yes_no(call.reexecute, "reexecute", "log"),
            yes_no(call.read_only, "read-only", "write"),
            format!("{:?}", row.then),
            row.why
        );
    }
}

/// The contract's sentences (DESIGN §3, ARCHITECTURE "Durability"), written out here, not
/// read from the tables: a change of a table that the contract does not make fails here.
#[test]
fn the_tables_keep_the_contract() {
    for call in every_recorded() {
        let expected = match (call.same, call.state, call.ephemeral, call.last) {
            // At seq N the call must be the one recorded, or the run ends in error.
            (false, ..) => Replay::FailDiverged,
            // An applied entry returns its result without running again, unless its
            // tool is `reexecute`, which runs on every pass.
            (true, EntryState::Applied, false, _) => Replay::ReturnResult,
            (true, EntryState::Applied, true, _) => Replay::RunAgain,
            // A failed call throws its recorded error again.
            (true, EntryState::Error, ..) => Replay::ThrowError,
            // Approve runs the named actions and rejects the rest, which throw.
            (true, EntryState::Pending, _, Some(DecisionKind::Reject)) => Replay::ThrowRejection,
            (true, EntryState::Pending, _, Some(DecisionKind::Approve)) => Replay::RunApproved,
            // A pending call no person decided on waits for one: nothing runs unapproved.
            (true, EntryState::Pending, ..) => Replay::ParkUndecided,
            // Left executing by a crash: runs again with the same idempotency key.
            (true, EntryState::Executing, ..) => Replay::RunInterrupted,
            // A rolled-back execution cannot run again.
            (true, EntryState::Reverted, ..) => Replay::FailReverted,
        };
        assert_eq!(replay(call), expected, "{call:?}");
    }
    for call in every_first() {
        let expected = if call.approval && call.standing {
            // A standing approval covers later calls of its methods.
            FirstRun::RunCovered
        } else if call.approval {
            // A call that needs approval is recorded pending and the pass pauses.
            FirstRun::Pause
        } else if call.read_only || call.reexecute {
            // Safe to run twice: committed with the next commit.
            FirstRun::RunRead
        } else {
            // `executing` is durable before a write reaches its connector.
            FirstRun::RunWrite
        };
        assert_eq!(first_run(call), expected, "{call:?}");
    }
}

/// The coverage of the conformance suite names rows by their `why`.
#[test]
fn every_row_has_its_own_why() {
    let whys: Vec<&str> = REPLAY_TABLE
        .iter()
        .map(|r| r.why)
        .chain(FIRST_RUN_TABLE.iter().map(|r| r.why))
        .collect();
    let unique: std::collections::BTreeSet<_> = whys.iter().collect();
    assert_eq!(unique.len(), whys.len(), "{whys:?}");
}

#[test]
fn divergence_names_the_seq_and_both_calls_and_cuts_long_arguments() {
    let call = HostCall {
        namespace: "probe".into(),
        method: "write".into(),
        args: serde_json::json!({ "value": "é".repeat(400) }),
    };
    let recorded = LogEntry {
        seq: 3,
        connector: "probe".into(),
        method: "read".into(),
        args: serde_json::json!({ "i": 1 }),
        result: None,
        error: None,
        requires_approval: false,
        ephemeral: false,
        read_only: true,
        state: EntryState::Applied,
        approved_args: None,
        decisions: Vec::new(),
        delivered: None,
    };
    let divergence = Divergence::at(3, &recorded, &call);
    let Divergence::Call {
        seq,
        recorded: was,
        called,
    } = &divergence
    else {
        panic!("{divergence:?}")
    };
    assert_eq!((*seq, was.as_str()), (3, r#"probe.read({"i":1})"#));
    let args = called
        .strip_prefix("probe.write(")
        .and_then(|a| a.strip_suffix("…)"))
        .unwrap_or_else(|| panic!("{called}"));
    assert!(args.len() <= 300 && args.len() > 290, "{}", args.len());
    let message = divergence.to_string();
    assert!(message.starts_with("replay diverged at seq 3: the log recorded probe.read("));
    assert!(message.contains(called.as_str()), "{message}");
}
