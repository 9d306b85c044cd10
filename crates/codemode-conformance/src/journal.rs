//! `ledger`: a connector whose writes land in an append-only file, deduplicated by
//! idempotency key, so a test can count real side effects across process crashes.

use codemode::{CallContext, RustConnector, RustTool, ToolError};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Lines of the journal: `attempt KEY` for every run, `effect KEY` for every applied effect.
pub fn read_journal(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn append(path: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("journal");
    writeln!(f, "{line}").expect("journal");
    f.sync_all().expect("journal");
}

/// Where a child process should die, set by the crash test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// Never.
    None,
    /// Inside the write at `seq`, before its effect (its `executing` mark is durable).
    BeforeEffect(u64),
    /// Inside the write at `seq`, after its effect, before it returns.
    AfterEffect(u64),
}

/// The ledger connector writing to `journal`, dying at `crash`.
pub fn ledger(journal: PathBuf, crash: CrashPoint) -> RustConnector {
    RustConnector::new("ledger")
        .tool(
            RustTool::new("write", move |args: Value, ctx: CallContext| {
                let journal = journal.clone();
                async move {
                    let key = ctx.idempotency_key();
                    append(&journal, &format!("attempt {key}"));
                    if crash == CrashPoint::BeforeEffect(ctx.seq) {
                        std::process::abort();
                    }
                    let done = read_journal(&journal).contains(&format!("effect {key}"));
                    if !done {
                        append(&journal, &format!("effect {key}"));
                    }
                    if crash == CrashPoint::AfterEffect(ctx.seq) {
                        std::process::abort();
                    }
                    Ok::<Value, ToolError>(json!({ "written": args["value"], "key": key }))
                }
            })
            .description("Appends a value to the ledger; idempotent by key.")
            .requires_approval(false),
        )
        .tool(
            RustTool::new("confirm", |_args: Value, _ctx: CallContext| async {
                Ok::<Value, ToolError>(json!("confirmed"))
            })
            .description("Needs approval; marks the end of the test script."),
        )
}

/// The script the crash test runs: three ledger writes, then an approval.
pub const CRASH_SCRIPT: &str = r#"async () => {
  const a = await ledger.write({ value: "a" });
  const b = await ledger.write({ value: "b" });
  const c = await ledger.write({ value: "c" });
  await ledger.confirm({});
  return [a.key, b.key, c.key];
}"#;

/// One place a crash test kills a node, and the log the next node must find.
#[derive(Debug, Clone, Copy)]
pub struct CrashCase {
    /// `before` or `after` the write's effect (the child's argument).
    pub point: &'static str,
    /// The seq of the write the node dies in.
    pub seq: u64,
    /// Entry states the reopened log must show before the take-over.
    pub states_after_crash: &'static [codemode::EntryState],
}

/// Every durable point of [`CRASH_SCRIPT`] a crash test kills a node at.
pub const CRASH_CASES: &[CrashCase] = {
    use codemode::EntryState::{Applied, Executing};
    &[
        // Inside the first write, after its `executing` mark, before its effect.
        CrashCase {
            point: "before",
            seq: 0,
            states_after_crash: &[Executing],
        },
        // Inside the first write, after its effect, before its result is recorded.
        CrashCase {
            point: "after",
            seq: 0,
            states_after_crash: &[Executing],
        },
        // Inside the third write: the first two are `applied` (committed with its mark).
        CrashCase {
            point: "before",
            seq: 2,
            states_after_crash: &[Applied, Applied, Executing],
        },
        CrashCase {
            point: "after",
            seq: 2,
            states_after_crash: &[Applied, Applied, Executing],
        },
    ]
};
