//! Property test: an arbitrary JSON value a connector returns goes into the log and comes back
//! by replay unchanged — numbers bit for bit, strings with NUL and astral characters, odd keys,
//! deep nesting; integers within ±2^53, as JavaScript numbers hold them — on a SQLite file and
//! on PostgreSQL. Each case runs the call live, pauses on
//! an approval, and returns the value from the resumed pass, where the call is replayed from
//! the store (the connector is not asked again). `PROPTEST_CASES` sets the number of cases.

use codemode::{Outcome, Runtime, RustConnector, RustTool, Store};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};
use serde_json::{json, Map, Number, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6}",
        Just("__proto__".to_string()),
        Just("constructor".to_string()),
        Just("".to_string()),
        Just("a\u{0}b".to_string()),
        "\\PC{0,8}",
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        // Integers a JavaScript number holds exactly (±2^53): past that the code sees the
        // nearest double, as in any JavaScript.
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite, not -0", |d| d.is_finite()
                && !(*d == 0.0 && d.is_sign_negative()))
            .prop_map(|d| Number::from_f64(d).map_or(Value::Null, Value::Number)),
        "\\PC{0,16}".prop_map(Value::from),
        Just(Value::from("nul \u{0} and astral \u{1F600} and \u{FFFF}")),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

const CODE: &str = "async () => { const v = await probe.give({}); await probe.gate({}); return v }";

/// A runtime whose `probe.give` answers what the slot holds, counting the times it is asked.
struct Rig {
    rt: Runtime,
    slot: Arc<Mutex<Value>>,
    asked: Arc<AtomicUsize>,
}

fn rig(store: Arc<dyn Store>) -> Rig {
    let slot = Arc::new(Mutex::new(Value::Null));
    let asked = Arc::new(AtomicUsize::new(0));
    let (given, count) = (slot.clone(), asked.clone());
    let probe = RustConnector::new("probe")
        .tool(
            RustTool::new("give", move |_args, _ctx| {
                let value = given.lock().unwrap().clone();
                count.fetch_add(1, Ordering::SeqCst);
                async move { Ok(value) }
            })
            .read_only(),
        )
        .tool(RustTool::new("gate", |_args, _ctx| async {
            Ok(json!(null))
        }));
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let rt = Runtime::builder(store, executor)
        .connector(probe)
        .max_executions(10)
        .build()
        .unwrap();
    Rig { rt, slot, asked }
}

/// One value through a live call, a pause, and the replayed pass.
async fn round_trip(rig: &Rig, v: &Value) -> Result<(), TestCaseError> {
    *rig.slot.lock().unwrap() = v.clone();
    let before = rig.asked.load(Ordering::SeqCst);
    let paused = rig.rt.call(CODE).await.unwrap();
    prop_assert!(matches!(paused, Outcome::Paused { .. }), "{paused:?}");
    // Were the connector asked again, it would answer this.
    *rig.slot.lock().unwrap() = json!("asked again");
    let done = rig.rt.approve(paused.execution_id()).await.unwrap();
    let Outcome::Completed { result, .. } = done else {
        return Err(TestCaseError::fail(format!("{done:?}")));
    };
    // Equal as JavaScript sees it: doubles exactly equal (`1.0` is `1`), keys in any order
    // (integer-like keys come first in JavaScript objects).
    prop_assert!(
        codemode::value::canonical_eq(&result, v),
        "the value came back changed:\n{result}\n{v}"
    );
    prop_assert_eq!(
        rig.asked.load(Ordering::SeqCst),
        before + 1,
        "replayed, not asked"
    );
    Ok(())
}

/// Runs the property on `rig`, shrinking a failure and keeping it in
/// `tests/values_through_the_log.proptest-regressions` to be tried first next time.
fn check(tokio: &tokio::runtime::Runtime, rig: &Rig) {
    let config = ProptestConfig {
        cases: cases(2000),
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&value(), |v| tokio.block_on(round_trip(rig, &v)));
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn values_come_back_unchanged_through_a_sqlite_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("v.db")).unwrap());
    let tokio = tokio();
    let rig = tokio.block_on(async { rig(store) });
    check(&tokio, &rig);
}

#[test]
fn values_come_back_unchanged_through_a_postgres_log() {
    let tokio = tokio();
    let Some(db) = tokio
        .block_on(ScratchDatabase::for_tests("values_through_the_log"))
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = tokio.block_on(async { PostgresStore::connect(db.url()).await.expect("connect") });
    let rig = tokio.block_on(async { rig(Arc::new(store)) });
    check(&tokio, &rig);
    drop(rig);
    tokio.block_on(async move { drop(db) });
}
