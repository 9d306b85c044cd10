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

/// The ledger's write: an attempt line, the effect once per key, dying at `crash`.
fn ledger_write(
    journal: PathBuf,
    crash: CrashPoint,
) -> impl Fn(Value, CallContext) -> futures::future::BoxFuture<'static, Result<Value, ToolError>>
       + Send
       + Sync
       + 'static {
    move |args: Value, ctx: CallContext| {
        let journal = journal.clone();
        Box::pin(async move {
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
        })
    }
}

/// The ledger connector writing to `journal`, dying at `crash`.
pub fn ledger(journal: PathBuf, crash: CrashPoint) -> RustConnector {
    RustConnector::new("ledger")
        .tool(
            RustTool::new("write", ledger_write(journal.clone(), crash))
                .description("Appends a value to the ledger; idempotent by key.")
                .requires_approval(false),
        )
        .tool(
            RustTool::new("approved_write", ledger_write(journal, crash))
                .description("Appends a value to the ledger once approved; idempotent by key."),
        )
        .tool(
            RustTool::new("confirm", |_args: Value, _ctx: CallContext| async {
                Ok::<Value, ToolError>(json!("confirmed"))
            })
            .description("Needs approval; marks the end of the test script."),
        )
}

/// A script whose only write needs approval: the crash test kills the node inside the
/// approved write.
pub const APPROVED_WRITE_SCRIPT: &str = r#"async () => {
  const a = await ledger.approved_write({ value: "a" });
  return a.key;
}"#;

/// Two writes needing approval: the crash test approves the first with edited arguments for
/// the rest of the run, so the second runs without asking.
pub const EDITED_WRITE_SCRIPT: &str = r#"async () => {
  const a = await ledger.approved_write({ value: "model" });
  const b = await ledger.approved_write({ value: "second" });
  return [a.written, b.written, a.key, b.key];
}"#;

/// A script that starts three writes needing approval at once: a batch, approved together.
pub const BATCH_WRITE_SCRIPT: &str = r#"async () => {
  const done = await Promise.all(["a", "b", "c"].map((value) => ledger.approved_write({ value })));
  return done.map((d) => d.key);
}"#;

/// The script the crash test runs: three ledger writes, then an approval.
pub const CRASH_SCRIPT: &str = r#"async () => {
  const a = await ledger.write({ value: "a" });
  const b = await ledger.write({ value: "b" });
  const c = await ledger.write({ value: "c" });
  await ledger.confirm({});
  return [a.key, b.key, c.key];
}"#;

/// Two writes whose arguments hold clock readings and draws (and a branch on one), then an
/// approval: the crash test kills the node inside the second write, and the node that takes
/// the run over must replay the same readings and draws, or its calls would diverge.
pub const CLOCK_SCRIPT: &str = r#"async () => {
  const t = Date.now();
  const r = Math.random();
  const a = await ledger.write({ value: [t, r, r < 0.5 ? "low" : "high"] });
  const b = await ledger.write({ value: [Date.now(), Math.random(), new Date().getTime()] });
  await ledger.confirm({});
  return [a.written, b.written];
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

/// The pass deadline of the nodes the crash tests kill: long enough that a busy machine still
/// reaches the crash point, short enough for a short lease.
pub const CHILD_WALL_TIME: std::time::Duration = std::time::Duration::from_millis(1000);

/// The lease of the nodes the crash tests kill (a lease outlives the longest pass).
pub const CHILD_LEASE: std::time::Duration = std::time::Duration::from_millis(1200);

/// Resumes execution `id`, left running by a node that died, once the dead node's lease
/// ([`CHILD_LEASE`]) has passed: tries again while the lease still holds it, for at most ten
/// leases. Panics (naming `at`) on any other error.
pub async fn take_over(runtime: &codemode::Runtime, id: &str, at: &str) -> codemode::Outcome {
    let deadline = std::time::Instant::now() + CHILD_LEASE * 10;
    loop {
        match runtime.resume_interrupted(id).await {
            Ok(outcome) => return outcome,
            Err(codemode::RuntimeError::AlreadyHandled { .. })
                if std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await
            }
            Err(e) => panic!("{at}: take over: {e}"),
        }
    }
}

/// After a node died at `case`: another node (a fresh runtime named `runtime_name` on
/// `store`) finds the log the case predicts, takes the run over once the dead node's lease
/// ([`CHILD_LEASE`]) has passed, approves it, and every write has taken effect exactly once, the
/// crashed one attempted twice with the same key. Panics with what differed.
pub async fn take_over_and_check(
    store: std::sync::Arc<dyn codemode::Store>,
    runtime_name: &str,
    journal: &Path,
    case: &CrashCase,
) {
    use codemode::{ExecutionStatus, Outcome, Runtime};
    let at = format!("{} {}", case.point, case.seq);
    let executor = std::sync::Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let runtime = Runtime::builder(store, executor)
        .name(runtime_name)
        .connector(ledger(journal.to_path_buf(), CrashPoint::None))
        .build()
        .expect("runtime");
    let runs = runtime.executions(None).await.expect("executions");
    assert_eq!(runs.len(), 1, "{at}");
    let run = &runs[0];
    assert_eq!(run.status, ExecutionStatus::Running, "{at}");
    let states: Vec<codemode::EntryState> = run.log.iter().map(|e| e.state).collect();
    assert_eq!(states, case.states_after_crash, "{at}");

    let outcome = take_over(&runtime, &run.id, &at).await;
    assert!(
        matches!(outcome, Outcome::Paused { .. }),
        "{at}: {outcome:?}"
    );
    let outcome = runtime.approve(&run.id).await.expect("approve");
    let Outcome::Completed { result, .. } = outcome else {
        panic!("{at}: {outcome:?}")
    };
    let keys: Vec<String> = (0..3).map(|s| format!("{}:{s}", run.id)).collect();
    assert_eq!(result, json!(keys), "{at}");

    let lines = read_journal(journal);
    for (seq, key) in keys.iter().enumerate() {
        let count = |kind: &str| {
            lines
                .iter()
                .filter(|l| **l == format!("{kind} {key}"))
                .count()
        };
        assert_eq!(
            count("effect"),
            1,
            "{at}: seq {seq} must take effect exactly once: {lines:?}"
        );
        let expected_attempts = if seq as u64 == case.seq { 2 } else { 1 };
        assert_eq!(
            count("attempt"),
            expected_attempts,
            "{at}: seq {seq}: {lines:?}"
        );
    }
    // No line names any other key: every re-run used the key of its first run.
    assert!(
        lines
            .iter()
            .all(|l| keys.iter().any(|k| l.ends_with(k.as_str()))),
        "{at}: {lines:?}"
    );
}
