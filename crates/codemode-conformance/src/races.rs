//! Decisions racing on one execution from two runtimes (two nodes) over one database:
//! rollback against rollback, rollback against approval, delete against approval. Each
//! pair checks that every applied write is reverted at most once, that no run ends half
//! reverted, and that no approved pass loses its execution under it.

use crate::probe::Probe;
use codemode::{EntryState, ExecutionStatus, Outcome, Runtime, RuntimeError, Store};
use std::sync::Arc;

/// The code every pair runs: one write, then one that waits for approval.
const CODE: &str = "async () => { await probe.write({ value: 1 }); await probe.gated_write({ value: 2 }); return 'done' }";

/// How many pairs of each kind to race: `CODEMODE_RACE_PAIRS`, else 200.
pub fn race_pairs() -> usize {
    std::env::var("CODEMODE_RACE_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Two runtimes (nodes) over `a` and `b` (one database), sharing one probe.
fn nodes(a: Arc<dyn Store>, b: Arc<dyn Store>, name: &str) -> (Runtime, Runtime, Probe) {
    let probe = Probe::default();
    let node = |store| {
        let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
        Runtime::builder(store, executor)
            .name(name)
            .max_executions(100_000)
            .connector(probe.connector("probe"))
            .build()
            .expect("runtime")
    };
    (node(a), node(b), probe)
}

/// A paused execution with seq 0 applied and seq 1 pending.
async fn paused(runtime: &Runtime) -> String {
    match runtime.call(CODE).await.expect("call") {
        Outcome::Paused { execution_id, .. } => execution_id,
        other => panic!("expected a pause: {other:?}"),
    }
}

/// How often `what` appears in `list`.
fn count(list: &[String], what: &str) -> usize {
    list.iter().filter(|r| *r == what).count()
}

/// Whether `e` is a refusal a decision that lost a race may give.
fn lost_race(e: &RuntimeError) -> bool {
    matches!(
        e,
        RuntimeError::AlreadyHandled { .. } | RuntimeError::WrongStatus { .. }
    )
}

/// Checks one finished pair: each write was reverted at most once, reverted entries are
/// exactly the reverts the connector saw, and the status agrees with the log.
async fn check_consistent(runtime: &Runtime, probe: &Probe, id: &str, before: (usize, usize)) {
    let record = probe.record();
    let reverts = &record.reverts[before.0..];
    let gated_runs = record.keys[before.1..]
        .iter()
        .filter(|k| k.starts_with("gated_write@"))
        .count();
    let Some(run) = runtime.execution(id).await.expect("read") else {
        return;
    };
    for (seq, name) in [(0, "write#0"), (1, "gated_write#1")] {
        let reverted = run.log.get(seq).map(|e| e.state) == Some(EntryState::Reverted);
        let n = count(reverts, name);
        assert!(n <= 1, "{id}: {name} reverted {n} times: {reverts:?}");
        assert_eq!(
            reverted,
            n == 1,
            "{id}: {name} state vs reverts {reverts:?}"
        );
    }
    match run.status {
        ExecutionStatus::Completed => {
            assert!(
                reverts.is_empty(),
                "{id}: completed yet reverted {reverts:?}"
            );
            assert_eq!(gated_runs, 1, "{id}: completed without its approved write");
        }
        ExecutionStatus::RolledBack => {
            // Nothing applied is left: a half-reverted run would have an applied entry.
            let applied: Vec<u64> = run
                .log
                .iter()
                .filter(|e| e.state == EntryState::Applied)
                .map(|e| e.seq)
                .collect();
            assert!(
                applied.is_empty(),
                "{id}: rolled back with {applied:?} applied"
            );
            assert_eq!(
                count(reverts, "gated_write#1"),
                gated_runs,
                "{id}: the approved write ran but was not reverted, or the reverse"
            );
        }
        other => panic!("{id}: ended {other}"),
    }
}

/// Two rollbacks at once: exactly one reverts, each entry once.
pub async fn rollback_against_rollback(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let (ra, rb, probe) = nodes(a, b, "race-rollbacks");
    for _ in 0..race_pairs() {
        let id = paused(&ra).await;
        let before = (probe.record().reverts.len(), probe.record().keys.len());
        let (x, y) = (ra.clone(), rb.clone());
        let (i, j) = (id.clone(), id.clone());
        let one = tokio::spawn(async move { x.rollback(&i).await });
        let two = tokio::spawn(async move { y.rollback(&j).await });
        let results = [one.await.expect("task"), two.await.expect("task")];
        let reverting = results
            .iter()
            .filter(|r| r.as_ref().is_ok_and(|r| !r.reverted.is_empty()))
            .count();
        assert_eq!(reverting, 1, "{id}: {results:?}");
        for r in &results {
            if let Err(e) = r {
                assert!(lost_race(e), "{id}: {e}");
            }
        }
        check_consistent(&ra, &probe, &id, before).await;
    }
}

/// A rollback and an approval at once: one of them first, never interleaved.
pub async fn rollback_against_approve(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let (ra, rb, probe) = nodes(a, b, "race-rollback-approve");
    for _ in 0..race_pairs() {
        let id = paused(&ra).await;
        let before = (probe.record().reverts.len(), probe.record().keys.len());
        let (x, y) = (ra.clone(), rb.clone());
        let (i, j) = (id.clone(), id.clone());
        let rollback = tokio::spawn(async move { x.rollback(&i).await });
        let approve = tokio::spawn(async move { y.approve(&j).await });
        let (rolled, approved) = (rollback.await.expect("task"), approve.await.expect("task"));
        match &approved {
            Ok(outcome) => assert_eq!(
                outcome.status(),
                ExecutionStatus::Completed,
                "{id}: {outcome:?}"
            ),
            Err(e) => assert!(lost_race(e), "{id}: approve {e}"),
        }
        if let Err(e) = &rolled {
            assert!(lost_race(e), "{id}: rollback {e}");
        }
        assert!(
            rolled.is_ok() || approved.is_ok(),
            "{id}: both lost: {rolled:?} {approved:?}"
        );
        check_consistent(&ra, &probe, &id, before).await;
    }
}

/// A delete and an approval at once: a paused or running run is never deleted, so an
/// approval that won always finishes its pass.
pub async fn delete_against_approve(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let (ra, rb, probe) = nodes(a, b, "race-delete-approve");
    for _ in 0..race_pairs() {
        let id = paused(&ra).await;
        let before = (probe.record().reverts.len(), probe.record().keys.len());
        let (x, y) = (ra.clone(), rb.clone());
        let (i, j) = (id.clone(), id.clone());
        let delete = tokio::spawn(async move { x.delete_execution(&i).await });
        let approve = tokio::spawn(async move { y.approve(&j).await });
        let (deleted, approved) = (delete.await.expect("task"), approve.await.expect("task"));
        let approved = approved.unwrap_or_else(|e| panic!("{id}: approve failed: {e}"));
        assert_eq!(approved.status(), ExecutionStatus::Completed, "{id}");
        match deleted {
            Ok(true) => assert!(ra.execution(&id).await.unwrap().is_none()),
            Ok(false) => panic!("{id}: the execution was missing"),
            Err(e) => {
                assert!(lost_race(&e), "{id}: {e}");
                check_consistent(&ra, &probe, &id, before).await;
            }
        }
        let gated = probe.record().keys[before.1..]
            .iter()
            .filter(|k| k.starts_with("gated_write@"))
            .count();
        assert_eq!(gated, 1, "{id}: the approved write ran {gated} times");
    }
}
