//! Passes run in sandbox processes of the binary (`[sandbox] isolation = "process"`, the
//! default): a built-in stuck in C ends at the deadline; `isolation = "thread"` still runs.

mod common;

use std::time::{Duration, Instant};

use common::cli;

/// A `length` that passes the sandbox's check and is huge when `reverse` reads it again: it
/// loops in C and never reaches the interrupt handler.
const STUCK_IN_C: &str = "let n = 0; const o = { get length() { return n++ === 0 ? 0 : 2**53 - 1; } }; Array.prototype.reverse.call(o); return 1";

#[test]
fn a_built_in_stuck_in_c_ends_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let started = Instant::now();
    let out = cli(
        dir.path(),
        &db,
        &["--json", "--timeout-ms", "1000", "run", "-e", STUCK_IN_C],
    );
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Time limit: the code ran for more than 1000 ms"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[test]
fn isolation_thread_runs_passes_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("codemode.toml");
    std::fs::write(&config, "[sandbox]\nisolation = \"thread\"\n").unwrap();
    let db = dir.path().join("c.db");
    let out = cli(dir.path(), &db, &["--json", "run", "-e", "return 6 * 7"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("42"), "{stdout}");
    std::fs::write(&config, "[sandbox]\nisolation = \"vm\"\n").unwrap();
    let out = cli(dir.path(), &db, &["run", "-e", "return 1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("isolation"),
        "{stderr}"
    );
}
