//! Outcomes every store must give alike, under races between two runtimes (two nodes) on one
//! database: approving a subset of a batch, that approval racing a rejection, a cancel during
//! an approved pass, a rollback cut after its last revert, and text holding NUL characters.
//! Races loop `CODEMODE_RACE_ROUNDS` times (default 20).

use crate::probe::Probe;
use codemode::{
    Actor, Approval, Claim, Commit, Decision, DecisionKind, EntryState, Execution, ExecutionStatus,
    Lease, Outcome, Runtime, RuntimeError, RustConnector, RustTool, Store, ToolError,
};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many rounds each race runs: `CODEMODE_RACE_ROUNDS`, else 20.
pub fn race_rounds() -> usize {
    std::env::var("CODEMODE_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// A runtime over `store` named `name` with the probe and the bank connectors.
fn node(store: Arc<dyn Store>, name: &str, probe: &Probe, bank: &Bank) -> Runtime {
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    Runtime::builder(store, executor)
        .name(name)
        .max_executions(100_000)
        .connector(probe.connector("probe"))
        .connector(bank.connector())
        .build()
        .expect("runtime")
}

/// `bank.pay`: needs approval, takes `delay` before it answers, and is revertible; it records
/// the idempotency key of every run and of every revert, and says when a run starts.
#[derive(Clone)]
pub struct Bank {
    delay: Duration,
    runs: Arc<Mutex<Vec<String>>>,
    reverts: Arc<Mutex<Vec<String>>>,
    started: Arc<tokio::sync::Notify>,
}

impl Bank {
    /// A bank whose payments take `delay`.
    pub fn new(delay: Duration) -> Self {
        Bank {
            delay,
            runs: Arc::default(),
            reverts: Arc::default(),
            started: Arc::default(),
        }
    }

    fn connector(&self) -> RustConnector {
        let (bank, undo) = (self.clone(), self.clone());
        RustConnector::new("bank").tool(
            RustTool::new("pay", move |args: Value, ctx: codemode::CallContext| {
                let bank = bank.clone();
                async move {
                    bank.runs.lock().unwrap().push(ctx.idempotency_key());
                    bank.started.notify_one();
                    tokio::time::sleep(bank.delay).await;
                    Ok::<Value, ToolError>(
                        json!({ "paid": args["amount"], "key": ctx.idempotency_key() }),
                    )
                }
            })
            .description("Pays an amount; needs approval; revertible.")
            .requires_approval(true)
            .revert(
                move |_args: Value, _result: Value, ctx: codemode::CallContext| {
                    let undo = undo.clone();
                    async move {
                        undo.reverts.lock().unwrap().push(ctx.idempotency_key());
                        Ok(())
                    }
                },
            ),
        )
    }

    fn count(list: &Mutex<Vec<String>>, id: &str) -> usize {
        let prefix = format!("{id}:");
        list.lock()
            .unwrap()
            .iter()
            .filter(|k| k.starts_with(&prefix))
            .count()
    }
}

/// Runs of the probe's `gated_write` for execution `id`.
fn gated_runs(probe: &Probe, id: &str) -> Vec<String> {
    let prefix = format!("gated_write@{id}:");
    probe
        .record()
        .keys
        .into_iter()
        .filter(|k| k.starts_with(&prefix))
        .collect()
}

async fn read(runtime: &Runtime, id: &str) -> Execution {
    runtime
        .execution(id)
        .await
        .expect("read")
        .unwrap_or_else(|| panic!("{id} is missing"))
}

fn states(execution: &Execution) -> Vec<EntryState> {
    execution.log.iter().map(|e| e.state).collect()
}

/// A batch of two approval-gated writes, awaited together: the first rejection ends the code.
const BATCH: &str =
    "async () => Promise.all([probe.gated_write({ value: 1 }), probe.gated_write({ value: 2 })])";

async fn paused(runtime: &Runtime, code: &str) -> String {
    match runtime.call(code).await.expect("call") {
        Outcome::Paused { execution_id, .. } => execution_id,
        other => panic!("expected a pause: {other:?}"),
    }
}

/// Approving one action of a batch runs exactly it, once, even when the code stops at the
/// rejection of the other first (either order), and records the other rejected.
pub async fn subset_approval_runs_exactly_the_approved_writes(store: Arc<dyn Store>) {
    let probe = Probe::default();
    let rt = node(store, "subset", &probe, &Bank::new(Duration::ZERO));
    for approved in [0u64, 1] {
        let id = paused(&rt, BATCH).await;
        let outcome = rt
            .approve_with(&id, Approval::by("alice").seqs(vec![approved]))
            .await
            .expect("approve");
        let Outcome::Error { error, .. } = &outcome else {
            panic!("the rejection ends Promise.all: {outcome:?}")
        };
        assert!(error.contains("was rejected by alice"), "{error}");
        let runs = gated_runs(&probe, &id);
        assert_eq!(
            runs,
            vec![format!("gated_write@{id}:{approved}")],
            "approved seq {approved}: the approved write runs once, the other never"
        );
        let got = read(&rt, &id).await;
        assert_eq!(got.status, ExecutionStatus::Error);
        let mut want = vec![EntryState::Error, EntryState::Error];
        want[approved as usize] = EntryState::Applied;
        assert_eq!(states(&got), want, "approved seq {approved}: {:?}", got.log);
        let entry = &got.log[approved as usize];
        assert_eq!(
            entry.result.as_ref().map(|r| &r["seq"]),
            Some(&json!(approved))
        );
        let kinds: Vec<DecisionKind> = got.log.iter().map(|e| e.decisions[0].kind).collect();
        let mut want = vec![DecisionKind::Reject, DecisionKind::Reject];
        want[approved as usize] = DecisionKind::Approve;
        assert_eq!(kinds, want);
    }
}

/// An approval of one action of a batch racing a rejection of the run: exactly one wins, and
/// the run ends consistent: rejected with nothing run, or the approved write run once and
/// applied with the other an error. No entry is ever left `executing`.
pub async fn approve_subset_against_reject(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let probe = Probe::default();
    let bank = Bank::new(Duration::ZERO);
    let (ra, rb) = (
        node(a, "subset-reject", &probe, &bank),
        node(b, "subset-reject", &probe, &bank),
    );
    for _ in 0..race_rounds() {
        let id = paused(&ra, BATCH).await;
        let (x, y, i, j) = (ra.clone(), rb.clone(), id.clone(), id.clone());
        let approve = tokio::spawn(async move {
            x.approve_with(&i, Approval::by("alice").seqs(vec![1]))
                .await
        });
        let reject = tokio::spawn(async move { y.reject_with(&j, 0, Actor::new("bob")).await });
        let (approved, rejected) = (approve.await.expect("task"), reject.await.expect("task"));
        let got = read(&ra, &id).await;
        let runs = gated_runs(&probe, &id);
        match got.status {
            ExecutionStatus::Rejected => {
                assert!(runs.is_empty(), "{id}: rejected yet ran {runs:?}");
                assert_eq!(states(&got), [EntryState::Pending; 2], "{id}");
                assert_eq!(rejected.ok(), Some(true), "{id}");
                assert!(
                    matches!(
                        approved,
                        Err(RuntimeError::WrongStatus { .. } | RuntimeError::AlreadyHandled { .. })
                    ),
                    "{id}: {approved:?}"
                );
            }
            ExecutionStatus::Error => {
                assert_eq!(runs, vec![format!("gated_write@{id}:1")], "{id}");
                assert_eq!(
                    states(&got),
                    [EntryState::Error, EntryState::Applied],
                    "{id}"
                );
                assert!(approved.is_ok(), "{id}: {approved:?}");
                assert_ne!(rejected.as_ref().ok(), Some(&true), "{id}: {rejected:?}");
            }
            other => panic!("{id}: ended {other} with {:?}", got.log),
        }
    }
}

/// A cancel from another node while an approved write runs: the write stays `applied` with
/// its result, the run `cancelled`, and a rollback reverts the write once.
pub async fn cancel_during_an_approved_pass(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let probe = Probe::default();
    let bank = Bank::new(Duration::from_millis(150));
    let (ra, rb) = (
        node(a, "cancel-approved", &probe, &bank),
        node(b, "cancel-approved", &probe, &bank),
    );
    let code =
        "async () => { const r = await bank.pay({ amount: 5 }); await probe.read({}); return r }";
    for _ in 0..race_rounds() {
        let id = paused(&ra, code).await;
        let started = bank.started.notified();
        let (x, i) = (ra.clone(), id.clone());
        let pass = tokio::spawn(async move { x.approve(&i).await });
        started.await;
        let cancelled = rb.cancel(&id, Actor::new("bob")).await.expect("cancel");
        assert_eq!(cancelled.status, ExecutionStatus::Cancelled, "{id}");
        let outcome = pass.await.expect("task").expect("the pass ends");
        let Outcome::Error { error, .. } = &outcome else {
            panic!("{id}: {outcome:?}")
        };
        assert!(error.contains("cancelled by bob"), "{id}: {error}");
        check_cancelled_write(&rb, &bank, &id).await;
    }
}

/// A cancel on the node running an approved write that outlasts the cancel's grace: the same
/// outcome as from another node.
pub async fn cancel_of_a_slow_approved_write_on_its_node(store: Arc<dyn Store>) {
    let probe = Probe::default();
    let bank = Bank::new(codemode::CANCEL_GRACE + Duration::from_millis(300));
    let rt = node(store, "cancel-slow", &probe, &bank);
    let id = paused(&rt, "async () => bank.pay({ amount: 7 })").await;
    let started = bank.started.notified();
    let (x, i) = (rt.clone(), id.clone());
    let pass = tokio::spawn(async move { x.approve(&i).await });
    started.await;
    let cancelled = rt.cancel(&id, Actor::new("bob")).await.expect("cancel");
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    pass.await.expect("task").expect("the pass ends");
    check_cancelled_write(&rt, &bank, &id).await;
}

/// The paid write of cancelled `id` is applied with its result, and a rollback reverts it.
async fn check_cancelled_write(runtime: &Runtime, bank: &Bank, id: &str) {
    let got = read(runtime, id).await;
    assert_eq!(got.status, ExecutionStatus::Cancelled, "{id}");
    assert_eq!(Bank::count(&bank.runs, id), 1, "{id}: the write ran once");
    let pay = &got.log[0];
    assert_eq!(pay.state, EntryState::Applied, "{id}: {:?}", got.log);
    assert_eq!(
        pay.result.as_ref().map(|r| r["key"].clone()),
        Some(json!(format!("{id}:0")))
    );
    let report = runtime.rollback(id).await.expect("rollback");
    assert_eq!(report.reverted, vec![0], "{id}: {report:?}");
    assert_eq!(report.status, ExecutionStatus::RolledBack);
    assert_eq!(Bank::count(&bank.reverts, id), 1, "{id}: reverted once");
}

/// A completed run of two revertible writes, then a rollback cut after its last revert: both
/// entries reverted by `carol`, under a hold of a node that is gone (until `until_ms`), and no
/// decision on the execution.
async fn cut_rollback(store: &dyn Store, runtime: &Runtime, until_ms: i64) -> String {
    let code = "async () => { await probe.write({ value: 1 }); await probe.write({ value: 2 }); return 'ok' }";
    let id = runtime
        .call(code)
        .await
        .expect("call")
        .execution_id()
        .to_string();
    let now = codemode::now_ms();
    let gone = Lease {
        owner: "gone".into(),
        until_ms,
    };
    let Claim::Won(held) = store
        .hold(runtime.name(), &id, ExecutionStatus::Completed, &gone, now)
        .await
        .expect("hold")
    else {
        panic!("the cut rollback's hold")
    };
    let decision = Decision::new(DecisionKind::Rollback, Actor::new("carol"), now, Vec::new());
    for entry in held.log.iter().rev() {
        let mut reverted = entry.clone();
        reverted.state = EntryState::Reverted;
        reverted.decisions.push(decision.clone());
        let commit = Commit {
            execution_id: id.clone(),
            owner: Some("gone".into()),
            entries: vec![reverted],
            transition: None,
            clock: None,
        };
        assert!(store.commit(runtime.name(), &commit).await.expect("revert"));
    }
    id
}

/// The execution a cut rollback left is `rolled_back` with one rollback decision by `by`
/// listing both seqs, and nothing was reverted again.
async fn check_finished_rollback(runtime: &Runtime, probe: &Probe, id: &str, by: &str) {
    let got = read(runtime, id).await;
    assert_eq!(got.status, ExecutionStatus::RolledBack, "{id}");
    let rollbacks: Vec<&Decision> = got
        .decisions
        .iter()
        .filter(|d| d.kind == DecisionKind::Rollback)
        .collect();
    assert_eq!(rollbacks.len(), 1, "{id}: {:?}", got.decisions);
    assert_eq!(rollbacks[0].by, Actor::new(by));
    assert_eq!(rollbacks[0].seqs, vec![0, 1]);
    assert!(probe.record().reverts.is_empty(), "nothing reverted twice");
    assert_eq!(states(&got), [EntryState::Reverted; 2]);
}

/// A rollback cut after its last revert is finished by a resend (once the hold of the node
/// that was cut expires) and by recovery at start, its decision recorded once.
pub async fn a_rollback_cut_after_its_last_revert_is_finished(store: Arc<dyn Store>) {
    let probe = Probe::default();
    let rt = node(
        store.clone(),
        "cut-rollback",
        &probe,
        &Bank::new(Duration::ZERO),
    );
    let soon = || codemode::now_ms() + 300;
    let resent = cut_rollback(&*store, &rt, soon()).await;
    let recovered = cut_rollback(&*store, &rt, soon()).await;
    assert!(
        matches!(
            rt.rollback(&resent).await,
            Err(RuntimeError::AlreadyHandled { .. })
        ),
        "refused while the cut rollback's hold lasts"
    );
    let mut listed = rt.interrupted_rollbacks().await.expect("list");
    listed.sort();
    let mut want = vec![resent.clone(), recovered.clone()];
    want.sort();
    assert_eq!(listed, want);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let report = rt
        .rollback_with(&resent, Actor::new("dave"))
        .await
        .expect("resend");
    assert_eq!(report.status, ExecutionStatus::RolledBack);
    assert!(report.reverted.is_empty(), "{report:?}");
    check_finished_rollback(&rt, &probe, &resent, "dave").await;
    let again = rt.rollback(&resent).await.expect("a third rollback");
    assert_eq!(again.status, ExecutionStatus::RolledBack);
    check_finished_rollback(&rt, &probe, &resent, "dave").await;

    let report = rt.finish_rollback(&recovered).await.expect("recovery");
    assert_eq!(report.status, ExecutionStatus::RolledBack);
    check_finished_rollback(&rt, &probe, &recovered, "carol").await;
    assert!(rt.interrupted_rollbacks().await.expect("list").is_empty());
}

/// NUL characters in code, arguments, results, errors and console lines round-trip exactly;
/// no run is left `running`.
pub async fn nul_characters_round_trip(store: Arc<dyn Store>) {
    let probe = Probe::default();
    let rt = node(store, "nul", &probe, &Bank::new(Duration::ZERO));
    let code = "async () => {\n  // a raw NUL: \u{0}\n  console.log('log\\u0000line');\n  const r = await probe.write({ value: 'arg\\u0000x' });\n  try { await codemode.step('s', () => { throw new Error('step\\u0000error') }) } catch (e) {}\n  throw new Error('bad\\u0000thing ' + r.args.value);\n}";
    let outcome = rt.call(code).await.expect("call");
    let Outcome::Error {
        error,
        logs,
        execution_id,
        ..
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(error.contains("bad\u{0}thing arg\u{0}x"), "{error:?}");
    assert!(logs.iter().any(|l| l == "log\u{0}line"), "{logs:?}");
    let got = read(&rt, execution_id).await;
    assert_eq!(got.status, ExecutionStatus::Error);
    assert_eq!(got.code, code);
    assert_eq!(got.error.as_deref(), Some(error.as_str()));
    assert_eq!(&got.logs, logs);
    assert_eq!(got.log[0].args, json!({ "value": "arg\u{0}x" }));
    assert_eq!(
        got.log[0].result.as_ref().map(|r| &r["args"]["value"]),
        Some(&json!("arg\u{0}x"))
    );
    assert!(
        got.log[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("step\u{0}error")),
        "{:?}",
        got.log[1]
    );
    let done = rt.call("async () => 'done\\u0000'").await.expect("call");
    let Outcome::Completed { result, .. } = &done else {
        panic!("{done:?}")
    };
    assert_eq!(result, &json!("done\u{0}"));
    assert_eq!(
        read(&rt, done.execution_id()).await.result,
        Some(json!("done\u{0}"))
    );
}
