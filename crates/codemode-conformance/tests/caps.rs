//! Bounds on calls in flight (per connector, per execution) and per-call time limits.

use codemode::{EntryState, Outcome, Runtime, RuntimeBuilder, RuntimeError, Store};
use codemode_conformance::parallel::Meter;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn builder(dir: &tempfile::TempDir) -> (RuntimeBuilder, Arc<dyn Store>) {
    let store: Arc<dyn Store> =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    (Runtime::builder(store.clone(), executor), store)
}

const TEN_READS: &str =
    "const xs = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => m.get({ i })));
                         return xs.map((x) => x.i);";

async fn ten_reads(runtime: &Runtime) {
    let outcome = runtime.call(TEN_READS).await.unwrap();
    let Outcome::Completed { result, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(*result, json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_max_in_flight_calls_of_a_connector_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let meter = Meter::new(Duration::from_millis(20));
    let (b, _) = builder(&dir);
    let runtime = b
        .connector(meter.connector("m"))
        .max_in_flight(2)
        .build()
        .unwrap();
    ten_reads(&runtime).await;
    assert_eq!(meter.calls()["m.get"], 10);
    assert_eq!(meter.high_water(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_cap_is_eight_and_a_connector_may_have_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let meter = Meter::new(Duration::from_millis(20));
    let (b, _) = builder(&dir);
    let runtime = b.connector(meter.connector("m")).build().unwrap();
    ten_reads(&runtime).await;
    assert_eq!(meter.high_water(), codemode::runtime::DEFAULT_MAX_IN_FLIGHT);

    let meter = Meter::new(Duration::from_millis(20));
    let (b, _) = builder(&dir);
    let runtime = b
        .name("own")
        .connector(meter.connector("m"))
        .max_in_flight_for("m", 3)
        .build()
        .unwrap();
    ten_reads(&runtime).await;
    assert_eq!(meter.high_water(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_execution_cap_bounds_every_connector_together() {
    let dir = tempfile::tempdir().unwrap();
    let meter = Meter::new(Duration::from_millis(20));
    let (b, _) = builder(&dir);
    let runtime = b
        .connector(meter.connector("a"))
        .connector(meter.connector("b"))
        .max_in_flight_per_execution(3)
        .build()
        .unwrap();
    let code = "const xs = await Promise.all([0, 1, 2, 3, 4, 5].flatMap((i) => [a.get({ i }), b.get({ i })]));
                return xs.length;";
    let outcome = runtime.call(code).await.unwrap();
    assert!(
        matches!(&outcome, Outcome::Completed { result, .. } if *result == json!(12)),
        "{outcome:?}"
    );
    assert_eq!(meter.high_water(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caps_of_zero_and_unknown_connectors_are_build_errors() {
    let dir = tempfile::tempdir().unwrap();
    let meter = Meter::default();
    let builds: Vec<fn(RuntimeBuilder) -> RuntimeBuilder> = vec![
        |b| b.max_in_flight(0),
        |b| b.max_in_flight_per_execution(0),
        |b| b.max_in_flight_for("m", 0),
        |b| b.max_in_flight_for("nope", 2),
        |b| b.call_timeout_for("nope", Duration::from_secs(1)),
        |b| b.call_timeout_for("m", Duration::ZERO),
    ];
    for (i, build) in builds.into_iter().enumerate() {
        let (b, _) = builder(&dir);
        let built = build(b.connector(meter.connector("m"))).build();
        assert!(
            matches!(built, Err(RuntimeError::InvalidConfig(_))),
            "case {i} was not refused"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_fails_is_logged_and_replays_as_the_same_error() {
    let dir = tempfile::tempdir().unwrap();
    let meter = Meter::default();
    let (b, store) = builder(&dir);
    let runtime = b
        .connector(meter.connector("m"))
        .call_timeout_for("m", Duration::from_millis(50))
        .build()
        .unwrap();
    let code = "let message = null;
                try { await m.hang({}); } catch (e) { message = e.message; }
                await m.put({ message });
                return message;";
    let live = runtime.call(code).await.unwrap();
    let Outcome::Paused {
        execution_id,
        pending,
    } = &live
    else {
        panic!("{live:?}")
    };
    let said = "m.hang did not answer within 50 ms";
    assert_eq!(pending[0].args, json!({ "message": said }));
    let done = runtime.approve(execution_id).await.unwrap();
    assert!(
        matches!(&done, Outcome::Completed { result, .. } if *result == json!(said)),
        "{done:?}"
    );
    assert_eq!(meter.calls()["m.hang"], 1, "the replay did not call again");
    let execution = store
        .execution("default", execution_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(execution.log[0].state, EntryState::Error);
    assert_eq!(execution.log[0].error.as_deref(), Some(said));
}
