//! Kills a child process running an execution at each durable point, reopens the database
//! and resumes: nothing applied runs again, an `executing` call re-runs with the same key.

use codemode_conformance::journal::{take_over, take_over_and_check, CRASH_CASES};
use std::process::Command;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_loses_nothing_and_doubles_nothing() {
    for case in CRASH_CASES {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("codemode.db");
        let journal = dir.path().join("journal.txt");
        let status = Command::new(env!("CARGO_BIN_EXE_crash-child"))
            .args([
                db.to_str().unwrap(),
                journal.to_str().unwrap(),
                case.point,
                &case.seq.to_string(),
            ])
            .status()
            .unwrap();
        assert!(
            !status.success(),
            "the child must die at {} {}",
            case.point,
            case.seq
        );

        let store = Arc::new(codemode_sqlite::SqliteStore::open(&db).unwrap());
        take_over_and_check(store, "default", &journal, case).await;
    }
}

/// A node dies inside an approved write, before or after its effect. The run is left
/// `running` with the write `executing`; once the lease has passed, another node resumes it
/// by id and the write takes effect exactly once, attempted twice with one key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_in_an_approved_write_is_resumed_and_applies_it_once() {
    use codemode::{EntryState, ExecutionStatus, Outcome, Runtime};
    use codemode_conformance::journal::{ledger, read_journal, CrashPoint};
    for point in ["before", "after"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("codemode.db");
        let journal = dir.path().join("journal.txt");
        let status = Command::new(env!("CARGO_BIN_EXE_crash-child"))
            .args([
                db.to_str().unwrap(),
                journal.to_str().unwrap(),
                point,
                "0",
                "approved",
            ])
            .status()
            .unwrap();
        assert!(!status.success(), "the child must die {point} the effect");

        let store = Arc::new(codemode_sqlite::SqliteStore::open(&db).unwrap());
        let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
        let runtime = Runtime::builder(store, executor)
            .connector(ledger(journal.clone(), CrashPoint::None))
            .build()
            .unwrap();
        let run = runtime.executions(None).await.unwrap().remove(0);
        assert_eq!(run.status, ExecutionStatus::Running, "{point}");
        assert_eq!(run.log[0].state, EntryState::Executing, "{point}");
        let outcome = take_over(&runtime, &run.id, point).await;
        let key = format!("{}:0", run.id);
        let Outcome::Completed { result, .. } = outcome else {
            panic!("{point}: {outcome:?}")
        };
        assert_eq!(result, serde_json::json!(key), "{point}");
        let lines = read_journal(&journal);
        let effects = lines
            .iter()
            .filter(|l| **l == format!("effect {key}"))
            .count();
        let attempts = lines
            .iter()
            .filter(|l| **l == format!("attempt {key}"))
            .count();
        assert_eq!((effects, attempts), (1, 2), "{point}: {lines:?}");
        assert_eq!(lines.len(), 3, "{point}: another key was used: {lines:?}");
        let after = runtime.execution(&run.id).await.unwrap().unwrap();
        assert_eq!(after.status, ExecutionStatus::Completed);
        assert_eq!(after.log[0].state, EntryState::Applied);
    }
}

/// A node dies in the middle of a batch of approved writes, inside the write at seq 1: with
/// the ledger's writes running one at a time, seq 0 has run and seq 2 has not; with them
/// running at once, any of them may have. The resumed run applies each write exactly once,
/// by its own key, and returns every key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_in_a_batch_of_approved_writes_applies_each_once() {
    use codemode::{EntryState, ExecutionStatus, Outcome, Runtime};
    use codemode_conformance::journal::{ledger, read_journal, CrashPoint};
    for (point, mode) in [
        ("before", "batch"),
        ("after", "batch"),
        ("after", "batch-parallel"),
    ] {
        let at = format!("{mode} {point}");
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("codemode.db");
        let journal = dir.path().join("journal.txt");
        let status = Command::new(env!("CARGO_BIN_EXE_crash-child"))
            .args([
                db.to_str().unwrap(),
                journal.to_str().unwrap(),
                point,
                "1",
                mode,
            ])
            .status()
            .unwrap();
        assert!(!status.success(), "{at}: the child must die in seq 1");

        let store = Arc::new(codemode_sqlite::SqliteStore::open(&db).unwrap());
        let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
        let runtime = Runtime::builder(store, executor)
            .connector(ledger(journal.clone(), CrashPoint::None))
            .build()
            .unwrap();
        let run = runtime.executions(None).await.unwrap().remove(0);
        assert_eq!(run.status, ExecutionStatus::Running, "{at}");
        let key = |seq: u64| format!("{}:{seq}", run.id);
        let before = read_journal(&journal);
        assert!(
            before.contains(&format!("attempt {}", key(1))),
            "{at}: seq 1 was attempted: {before:?}"
        );
        // Whether seq 0's result was recorded before the node died: the cap lets seq 1 in
        // when seq 0 returns, and the commit of seq 0's result may not have landed by then.
        let first_recorded = run.log[0].state == EntryState::Applied;
        if mode == "batch" {
            // One at a time: seq 0 ran (its result recorded or not), seq 2 never started.
            let states: Vec<_> = run.log.iter().map(|e| e.state).collect();
            assert!(
                [EntryState::Applied, EntryState::Executing].contains(&states[0]),
                "{at}: {states:?}"
            );
            assert_eq!(
                states[1..],
                [EntryState::Executing, EntryState::Pending],
                "{at}"
            );
            assert!(before.contains(&format!("effect {}", key(0))), "{at}");
            assert!(
                !before.iter().any(|l| l.ends_with(&key(2))),
                "{at}: {before:?}"
            );
        }
        let outcome = take_over(&runtime, &run.id, &at).await;
        let Outcome::Completed { result, .. } = outcome else {
            panic!("{at}: {outcome:?}")
        };
        assert_eq!(result, serde_json::json!([key(0), key(1), key(2)]), "{at}");
        let lines = read_journal(&journal);
        for seq in 0..3 {
            let effects = lines
                .iter()
                .filter(|l| **l == format!("effect {}", key(seq)))
                .count();
            assert_eq!(effects, 1, "{at}: seq {seq} applied once: {lines:?}");
        }
        if mode == "batch" {
            let attempts = |seq| {
                lines
                    .iter()
                    .filter(|l| **l == format!("attempt {}", key(seq)))
                    .count()
            };
            // An unrecorded seq 0 is attempted again with its key, which applies nothing.
            let first = if first_recorded { 1 } else { 2 };
            assert_eq!(
                (attempts(0), attempts(1), attempts(2)),
                (first, 2, 1),
                "{at}"
            );
        }
        let after = runtime.execution(&run.id).await.unwrap().unwrap();
        assert_eq!(after.status, ExecutionStatus::Completed, "{at}");
        assert!(
            after.log.iter().all(|e| e.state == EntryState::Applied),
            "{at}"
        );
    }
}

/// A node dies inside (before or after the effect of) the second write of a run whose first
/// write was approved with edited arguments for the rest of the run. Resumed on another node
/// (SQLite and PostgreSQL), the replay matches the model's arguments of the first write and
/// keeps the person's, the standing approval still covers the second (no new pause), and
/// each write takes effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_and_standing_approvals_survive_a_crash_on_both_stores() {
    use codemode::{ExecutionStatus, Outcome, Runtime, Store};
    use codemode_conformance::journal::{ledger, read_journal, CrashPoint};
    let pg = codemode_postgres::ScratchDatabase::for_tests("edited_and_standing_approvals_crash")
        .await
        .expect("the PostgreSQL test server");
    for point in ["before", "after"] {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = dir.path().join("codemode.db");
        let mut stores = vec![sqlite.to_str().unwrap().to_string()];
        if let Some(db) = &pg {
            stores.push(db.url().to_string());
        }
        for (n, db) in stores.iter().enumerate() {
            let journal = dir.path().join(format!("journal-{n}.txt"));
            let status = Command::new(env!("CARGO_BIN_EXE_crash-child"))
                .args([db, journal.to_str().unwrap(), point, "1", "edited"])
                .status()
                .unwrap();
            assert!(
                !status.success(),
                "the child must die {point} seq 1 on {db}"
            );
            let store: Arc<dyn Store> = if n == 0 {
                Arc::new(codemode_sqlite::SqliteStore::open(db).unwrap())
            } else {
                Arc::new(codemode_postgres::PostgresStore::connect(db).await.unwrap())
            };
            let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
            let runtime = Runtime::builder(store, executor)
                .connector(ledger(journal.clone(), CrashPoint::None))
                .build()
                .unwrap();
            let run = runtime
                .executions(None)
                .await
                .unwrap()
                .into_iter()
                .find(|e| e.status == ExecutionStatus::Running)
                .expect("the dead node's run");
            assert_eq!(run.log[0].args["value"], "model");
            assert_eq!(
                run.log[0].approved_args.as_ref().unwrap()["value"],
                "person"
            );
            let outcome = take_over(&runtime, &run.id, &format!("{point} {db}")).await;
            let Outcome::Completed { result, .. } = outcome else {
                panic!("{point} {db}: {outcome:?}")
            };
            let (k0, k1) = (format!("{}:0", run.id), format!("{}:1", run.id));
            assert_eq!(
                result,
                serde_json::json!(["person", "second", k0, k1]),
                "{point} {db}"
            );
            let lines = read_journal(&journal);
            for key in [&k0, &k1] {
                let effects = lines
                    .iter()
                    .filter(|l| **l == format!("effect {key}"))
                    .count();
                assert_eq!(effects, 1, "{point} {db} {key}: {lines:?}");
            }
            let after = runtime.execution(&run.id).await.unwrap().unwrap();
            assert_eq!(after.status, ExecutionStatus::Completed);
            // One decision: the standing approval, recorded on both entries.
            assert_eq!(after.decisions.len(), 1, "{:?}", after.decisions);
            assert_eq!(after.log[1].decisions.len(), 1, "{:?}", after.log[1]);
            assert_eq!(after.log[1].decisions[0].by.to_string(), "alice");
        }
    }
}

/// A node dies inside a write whose arguments hold clock readings and random draws (its
/// `executing` mark carried the readings). The node that takes the run over, later, replays
/// the same readings and draws: the applied write before matches its log, the interrupted
/// one runs again with its recorded arguments, and the run goes on to its approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_over_after_a_crash_replays_its_clock_and_draws() {
    use codemode::{now_ms, EntryState, ExecutionStatus, Outcome, Runtime};
    use codemode_conformance::journal::{ledger, CrashPoint};
    for point in ["before", "after"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("codemode.db");
        let journal = dir.path().join("journal.txt");
        let status = Command::new(env!("CARGO_BIN_EXE_crash-child"))
            .args([
                db.to_str().unwrap(),
                journal.to_str().unwrap(),
                point,
                "1",
                "clock",
            ])
            .status()
            .unwrap();
        assert!(!status.success(), "the child must die {point} the effect");

        let store = Arc::new(codemode_sqlite::SqliteStore::open(&db).unwrap());
        let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
        let runtime = Runtime::builder(store, executor)
            .connector(ledger(journal.clone(), CrashPoint::None))
            .build()
            .unwrap();
        let run = runtime.executions(None).await.unwrap().remove(0);
        assert_eq!(run.status, ExecutionStatus::Running, "{point}");
        assert_eq!(run.log[1].state, EntryState::Executing, "{point}");
        assert_eq!(run.clock.readings(), 3, "{point}: {:?}", run.clock);
        let first = run.log[0].args["value"].clone();
        let second = run.log[1].args["value"].clone();
        let taken_at = now_ms();
        let outcome = take_over(&runtime, &run.id, point).await;
        let Outcome::Paused { pending, .. } = outcome else {
            panic!("{point}: the run taken over did not replay to its approval: {outcome:?}")
        };
        assert_eq!(pending[0].method, "confirm", "{point}");
        let Outcome::Completed { result, .. } = runtime.approve(&run.id).await.unwrap() else {
            panic!("{point}: not completed")
        };
        assert_eq!(result, serde_json::json!([first, second]), "{point}");
        // The readings are the dead node's, not the clock's at the take-over.
        assert!(second[0].as_i64().unwrap() < taken_at, "{point}");
    }
}
