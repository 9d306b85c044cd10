//! A sandbox process killed by the system in the middle of a pass (alone in its test binary,
//! so that its only children are this executor's processes).

mod common;

use std::time::{Duration, Instant};

use codemode_quickjs::QuickJsOptions;
use common::{failure, process_executor, returned, run_on, TestHost};
use serde_json::json;

/// This test process's children (the sandbox processes).
fn children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let parent = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(str::trim);
        if parent == Some(me.as_str()) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_by_the_system_mid_pass_fails_the_pass_and_is_replaced() {
    let options = QuickJsOptions::default().with_wall_time(Duration::from_secs(30));
    let executor = process_executor(options, |p| p.with_warm(1)).await;
    let before = children();
    assert_eq!(before.len(), 1, "{before:?}");
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        for pid in before {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    });
    let started = Instant::now();
    let result = run_on(&executor, "for (;;) {}", TestHost::echo()).await;
    let message = failure(&result);
    assert!(
        message.starts_with("The sandbox process died during the pass (killed by signal 9"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let after = run_on(&executor, "return 'again'", TestHost::echo()).await;
    assert_eq!(returned(&after), json!("again"));
}
