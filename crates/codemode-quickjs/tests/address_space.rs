//! A process whose address space is capped (`ulimit -v`) still runs passes: the sandbox
//! reserves less room for a runtime when the roomy reservation is refused.
// Capping the child's address space is one system call, `setrlimit`.
#![allow(unsafe_code)]

mod common;

use std::process::Command;
use std::time::Duration;

use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::*;
use serde_json::json;

const CHILD: &str = "CODEMODE_TEST_CAPPED_CHILD";
/// The memory limit of the child's passes: its roomy reservation is four times this.
const LIMIT: usize = 256 << 20;

fn virtual_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib * 1024
}

/// In the child: caps the address space at what it uses plus 800 MB (less than the roomy
/// 1,088 MB reservation, more than the tight 400 MB one), then runs passes.
fn capped() {
    let cap = virtual_size() + (800 << 20);
    let limit = libc::rlimit {
        rlim_cur: cap,
        rlim_max: cap,
    };
    // SAFETY: a plain system call with a valid limit block.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = QuickJsOptions::default()
        .with_memory_limit(LIMIT)
        .with_wall_time(Duration::from_secs(20))
        .with_max_threads(1);
    let executor = QuickJsExecutor::new(options);
    for _ in 0..3 {
        let code = "async () => { const a = []; for (let i = 0; i < 1000; i++) a.push('x' + i); globalThis.leak = 1; return a.length; }";
        let result = runtime.block_on(run_with(&executor, code, TestHost::echo()));
        assert_eq!(returned(&result), json!(1000));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn passes_run_when_the_address_space_is_capped() {
    if std::env::var_os(CHILD).is_some() {
        capped();
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "passes_run_when_the_address_space_is_capped",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the capped child failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
