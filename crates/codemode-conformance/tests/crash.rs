//! Kills a child process running an execution at each durable point, reopens the database
//! and resumes: nothing applied runs again, an `executing` call re-runs with the same key.

use codemode::{EntryState, ExecutionStatus, Outcome, Runtime};
use codemode_conformance::journal::{ledger, read_journal, CrashPoint, CRASH_CASES};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

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
        let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
        let runtime = Runtime::builder(store, executor)
            .connector(ledger(journal.clone(), CrashPoint::None))
            .build()
            .unwrap();
        let runs = runtime.executions(None).await.unwrap();
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert_eq!(run.status, ExecutionStatus::Running);
        let states: Vec<EntryState> = run.log.iter().map(|e| e.state).collect();
        assert_eq!(
            states, case.states_after_crash,
            "{} {}",
            case.point, case.seq
        );

        // The dead node's lease (300 ms) must pass before another node may take over.
        tokio::time::sleep(Duration::from_millis(350)).await;
        let outcome = runtime.resume_interrupted(&run.id).await.unwrap();
        assert!(matches!(outcome, Outcome::Paused { .. }), "{outcome:?}");
        let outcome = runtime.approve(&run.id).await.unwrap();
        let Outcome::Completed { result, .. } = outcome else {
            panic!("{outcome:?}")
        };
        let keys: Vec<String> = (0..3).map(|s| format!("{}:{s}", run.id)).collect();
        assert_eq!(result, serde_json::json!(keys));

        let lines = read_journal(&journal);
        for (seq, key) in keys.iter().enumerate() {
            let attempts = lines
                .iter()
                .filter(|l| **l == format!("attempt {key}"))
                .count();
            let effects = lines
                .iter()
                .filter(|l| **l == format!("effect {key}"))
                .count();
            assert_eq!(
                effects, 1,
                "{} {}: seq {seq} must take effect exactly once: {lines:?}",
                case.point, case.seq
            );
            let crashed_here = seq as u64 == case.seq;
            let expected_attempts = if crashed_here { 2 } else { 1 };
            assert_eq!(
                attempts, expected_attempts,
                "{} {}: seq {seq}: {lines:?}",
                case.point, case.seq
            );
        }
        // No line names any other key: every re-run used the key of its first run.
        assert!(lines
            .iter()
            .all(|l| keys.iter().any(|k| l.ends_with(k.as_str()))));
    }
}
