//! Runtime rules that a scenario file cannot express: several runtimes on one file, a
//! connector gone missing, stale running executions, oversized code, every status against
//! every operation.

use codemode::{
    Execution, ExecutionStatus, Outcome, Runtime, RuntimeError, Store, MAX_DURABLE_VALUE_CHARS,
};
use codemode_conformance::{insert_running, Probe};
use codemode_sqlite::SqliteStore;
use std::sync::Arc;
use std::time::Duration;

fn executor() -> Arc<codemode_quickjs::QuickJsExecutor> {
    Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()))
}

fn runtime(store: Arc<dyn Store>, name: &str, probe: &Probe) -> Runtime {
    Runtime::builder(store, executor())
        .name(name)
        .connector(probe.connector("probe"))
        .build()
        .unwrap()
}

fn open(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(dir.path().join("codemode.db")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_named_runtimes_on_one_file_keep_separate_histories() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let probe = Probe::default();
    let research = runtime(store.clone(), "research", &probe);
    let operations = runtime(store.clone(), "operations", &probe);
    let a = research.call("async () => 'r'").await.unwrap();
    let b = operations
        .call("async () => { await probe.gated_write({ value: 1 }) }")
        .await
        .unwrap();
    let ids = |v: Vec<Execution>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(
        ids(research.executions(None).await.unwrap()),
        vec![a.execution_id().to_string()]
    );
    assert_eq!(
        ids(operations.executions(None).await.unwrap()),
        vec![b.execution_id().to_string()]
    );
    assert!(research.pending(None).await.unwrap().is_empty());
    assert_eq!(operations.pending(None).await.unwrap().len(), 1);
    assert!(matches!(
        research.approve(b.execution_id()).await,
        Err(RuntimeError::UnknownExecution(_))
    ));
    // A reopened file still holds both histories apart.
    drop((research, operations));
    let store = open(&dir);
    assert_eq!(
        runtime(store.clone(), "research", &probe)
            .executions(None)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        runtime(store, "operations", &probe)
            .pending(None)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_without_a_recorded_connector_names_it_and_keeps_the_run_paused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let probe = Probe::default();
    let with_probe = runtime(store.clone(), "default", &probe);
    let other = Probe::default();
    let paused = Runtime::builder(store.clone(), executor())
        .connector(probe.connector("probe"))
        .connector(other.connector("extra"))
        .build()
        .unwrap()
        .call("async () => { await probe.gated_write({ value: 1 }) }")
        .await
        .unwrap();
    let before = with_probe
        .execution(paused.execution_id())
        .await
        .unwrap()
        .unwrap();
    let err = with_probe.approve(paused.execution_id()).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("extra") && text.contains("missing"), "{text}");
    let still = with_probe
        .execution(paused.execution_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(still.status, ExecutionStatus::Paused);
    assert_eq!(still, before, "nothing written, not even the pause's age");
    assert!(probe.record().runs.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expire_turns_stale_running_into_error_once_its_lease_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let probe = Probe::default();
    let rt = runtime(store.clone(), "default", &probe);
    // A run whose node died: running, lease already expired.
    let now = codemode::now_ms();
    insert_running(
        &*store,
        "dead-node-run",
        "async () => 1",
        10_000,
        "dead",
        now - 5_000,
    )
    .await;
    // A live one holds its lease and is not touched.
    insert_running(
        &*store,
        "live-run",
        "async () => 1",
        10_000,
        "alive",
        now + 600_000,
    )
    .await;
    let expired = rt
        .expire_paused(Duration::from_millis(1_000))
        .await
        .unwrap();
    assert_eq!(expired, vec!["dead-node-run".to_string()]);
    let e = rt.execution("dead-node-run").await.unwrap().unwrap();
    assert_eq!(e.status, ExecutionStatus::Error);
    assert!(e.error.unwrap().contains("expired"));
    assert_eq!(probe.record().disposals, vec!["error"]);
    // Approval never revives a stale running run.
    assert!(matches!(
        rt.approve("live-run").await,
        Err(RuntimeError::WrongStatus { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_code_fails_with_advice_and_a_small_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let rt = runtime(open(&dir), "default", &probe);
    let code = format!("async () => 1 // {}", "x".repeat(MAX_DURABLE_VALUE_CHARS));
    let outcome = rt.call(&code).await.unwrap();
    let Outcome::Error {
        error,
        execution_id,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(
        error.contains("1000000") && error.contains("reference"),
        "{error}"
    );
    let record = rt.execution(&execution_id).await.unwrap().unwrap();
    assert_eq!(record.status, ExecutionStatus::Error);
    assert!(
        record.code.len() < 200,
        "the audit record keeps an omission, not the code"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_final_result_reaches_the_model_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let rt = runtime(open(&dir), "default", &probe);
    let outcome = rt.call("async () => 'z'.repeat(1000001)").await.unwrap();
    let Outcome::Completed {
        result,
        execution_id,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(result.as_str().unwrap().len(), 1_000_001);
    let record = rt.execution(&execution_id).await.unwrap().unwrap();
    assert!(record.result.unwrap().as_str().unwrap().contains("omitted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_accepts_only_its_legal_operations() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let probe = Probe::default();
    let rt = runtime(store.clone(), "default", &probe);
    let gated =
        "async () => { await probe.write({ value: 0 }); await probe.gated_write({ value: 1 }) }";
    let mut by_status = Vec::new();
    // paused
    let p = rt.call(gated).await.unwrap();
    by_status.push((ExecutionStatus::Paused, p.execution_id().to_string()));
    // completed
    let c = rt
        .call("async () => { await probe.write({ value: 0 }); return 1 }")
        .await
        .unwrap();
    by_status.push((ExecutionStatus::Completed, c.execution_id().to_string()));
    // error
    let e = rt
        .call("async () => { await probe.write({ value: 0 }); throw new Error('x') }")
        .await
        .unwrap();
    by_status.push((ExecutionStatus::Error, e.execution_id().to_string()));
    // rejected
    let r = rt.call(gated).await.unwrap();
    assert!(rt.reject(r.execution_id(), 1).await.unwrap());
    by_status.push((ExecutionStatus::Rejected, r.execution_id().to_string()));
    // rolled back
    let b = rt
        .call("async () => { await probe.write({ value: 0 }); return 1 }")
        .await
        .unwrap();
    rt.rollback(b.execution_id()).await.unwrap();
    by_status.push((ExecutionStatus::RolledBack, b.execution_id().to_string()));
    // running, held by a live lease
    let until = codemode::now_ms() + 600_000;
    insert_running(&*store, "running-run", gated, 0, "other-node", until).await;
    by_status.push((ExecutionStatus::Running, "running-run".into()));

    for (status, id) in &by_status {
        let current = rt.execution(id).await.unwrap().unwrap().status;
        assert_eq!(current, *status, "{id}");
        // approve: only paused -> running.
        let approved = rt.approve(id).await;
        assert_eq!(
            approved.is_ok(),
            status.can_become(ExecutionStatus::Running) && *status == ExecutionStatus::Paused,
            "approve {status}: {approved:?}"
        );
        if let Err(err) = &approved {
            assert!(err.to_string().contains(status.as_str()), "{err}");
        }
        // resume_interrupted: only running, and only once the lease expired (it has not).
        assert!(rt.resume_interrupted(id).await.is_err(), "resume {status}");
        let after = rt.execution(id).await.unwrap().unwrap().status;
        // reject: only a pending action of a paused run.
        assert!(!rt.reject(id, 1).await.unwrap() || after == ExecutionStatus::Paused);
        // rollback: refused while running; otherwise reaches rolled_back when something is reverted.
        let rolled = rt.rollback(id).await;
        if after == ExecutionStatus::Running {
            assert!(rolled.is_err(), "rollback of a running run must be refused");
        } else {
            let report = rolled.unwrap();
            let expect =
                if after.can_become(ExecutionStatus::RolledBack) && !report.reverted.is_empty() {
                    ExecutionStatus::RolledBack
                } else {
                    after
                };
            assert_eq!(report.status, expect, "rollback of {after}");
        }
    }
    assert!(matches!(
        rt.approve("no-such-id").await,
        Err(RuntimeError::UnknownExecution(_))
    ));
    assert!(matches!(
        rt.rollback("no-such-id").await,
        Err(RuntimeError::UnknownExecution(_))
    ));
    assert!(matches!(
        rt.reject("no-such-id", 0).await,
        Err(RuntimeError::UnknownExecution(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configuration_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let probe = Probe::default();
    let build = |c: Vec<codemode::RustConnector>| {
        let mut b = Runtime::builder(store.clone(), executor());
        for c in c {
            b = b.connector(c);
        }
        b.build().err().map(|e| e.to_string())
    };
    let dup = build(vec![probe.connector("probe"), probe.connector("probe")]).unwrap();
    assert!(dup.contains("unique"), "{dup}");
    let reserved = build(vec![probe.connector("codemode")]).unwrap();
    assert!(reserved.contains("codemode"), "{reserved}");
    let shadow = build(vec![probe.connector("JSON")]).unwrap();
    assert!(shadow.contains("shadow"), "{shadow}");
    let invalid = build(vec![probe.connector("my-api")]).unwrap();
    assert!(invalid.contains("identifier"), "{invalid}");
    let gated_reexecute = build(vec![codemode::RustConnector::new("x").tool(
        codemode::RustTool::new("t", |_, _| async { Ok(serde_json::Value::Null) }).reexecute(),
    )])
    .unwrap();
    assert!(gated_reexecute.contains("reexecute"), "{gated_reexecute}");
    // A tool whose schema does not compile stays local: it is left out with a warning, and
    // the rest of the runtime builds.
    let degraded = Runtime::builder(store.clone(), executor())
        .connector(
            codemode::RustConnector::new("x")
                .tool(
                    codemode::RustTool::new("t", |_, _| async { Ok(serde_json::Value::Null) })
                        .read_only()
                        .input_schema(serde_json::json!({ "type": 12 })),
                )
                .tool(
                    codemode::RustTool::new("ok", |_, _| async { Ok(serde_json::Value::Null) })
                        .read_only(),
                ),
        )
        .build()
        .unwrap();
    let warnings = degraded.warnings().join("\n");
    assert!(
        warnings.contains("`x`") && warnings.contains("`t`") && warnings.contains("schema"),
        "{warnings}"
    );
    let out = degraded.call("return await x.ok({})").await.unwrap();
    assert_eq!(
        out.status(),
        codemode::ExecutionStatus::Completed,
        "{out:?}"
    );
    let bad_name = Runtime::builder(store.clone(), executor())
        .name("no spaces")
        .build()
        .err()
        .unwrap();
    assert!(bad_name.to_string().contains("runtime name"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_names_connectors_and_host_side_discovery_matches_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let rt = Runtime::builder(open(&dir), executor())
        .connector(probe.connector("probe"))
        .hint("probe", "records every call")
        .build()
        .unwrap();
    let tool = rt.tool();
    assert_eq!(tool.name, "codemode");
    assert!(tool.description.contains("probe") && tool.description.contains("records every call"));
    assert!(
        tool.description.contains("codemode.search") && tool.description.contains("codemode.step")
    );
    // The probe's declarations fit the description's budget, so they are in it and the model
    // needs no discovery round trip (a connector past the budget is discovered instead).
    assert!(
        tool.description.contains("gated_write"),
        "small connectors are declared in the description"
    );
    let found = rt.search("gated write").await.unwrap();
    assert_eq!(found.results[0].path, "probe.gated_write");
    let described = rt.describe("probe.read").await.unwrap().unwrap();
    assert!(described.types.contains("read"));
    let unknown = rt.describe("nothing.here").await.unwrap().unwrap_err();
    assert!(unknown.contains("nothing.here"), "{unknown}");
    assert!(rt.types().contains("declare const probe"));
}
