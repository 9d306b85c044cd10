//! Kills a child process running an execution at each durable point, reopens the database
//! and resumes: nothing applied runs again, an `executing` call re-runs with the same key.

use codemode_conformance::journal::{take_over_and_check, CRASH_CASES};
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
