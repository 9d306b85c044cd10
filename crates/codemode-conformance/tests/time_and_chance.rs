//! `Date.now()`, `new Date()`, `Date()` and `Math.random()` replay across an approval: a
//! program that branches on chance and on the time takes, after the approval, the branch it
//! took before, on SQLite and on PostgreSQL (time having moved on between the passes).

use codemode::{Outcome, Runtime, Store};
use codemode_conformance::Probe;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Branches on a draw and on the parity of the time, then asks approval for a write whose
/// arguments hold every reading: a replay that read another value would call with other
/// arguments (a divergence) or take the other branch.
const BRANCHING: &str = r#"async () => {
  const r = Math.random();
  const t = Date.now();
  const when = new Date().getTime();
  const text = Date();
  const branch = (r < 0.5 ? "low" : "high") + (t % 2 === 0 ? "-even" : "-odd");
  if (branch.startsWith("low")) {
    await probe.gated_write({ value: { branch, r, t, when, text } });
  } else {
    await probe.gated_plain({ value: { branch, r, t, when, text } });
  }
  return { branch, r, t, when, text, after: Date.now(), draw: Math.random() };
}"#;

/// A runtime named `name` on `store` with the QuickJS executor and one probe connector, `probe`.
fn probe_runtime(store: Arc<dyn Store>, name: &str) -> Runtime {
    let probe = Probe::default();
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    Runtime::builder(store, executor)
        .name(name)
        .connector(probe.connector("probe"))
        .build()
        .unwrap()
}

async fn twenty_runs_keep_their_branch(store: Arc<dyn Store>, name: &str) {
    let runtime = probe_runtime(store, name);
    let mut branches = std::collections::BTreeMap::<String, u32>::new();
    for run in 0..20 {
        let outcome = runtime.call(BRANCHING).await.unwrap();
        let Outcome::Paused {
            execution_id,
            pending,
        } = outcome
        else {
            panic!("{name} run {run}: {outcome:?}")
        };
        let asked = pending[0].args["value"].clone();
        // Time moves on, and a new pass would draw from a new seed without the replay.
        tokio::time::sleep(Duration::from_millis(3)).await;
        let done = runtime.approve(&execution_id).await.unwrap();
        let Outcome::Completed { result, .. } = done else {
            panic!("{name} run {run}: the approved pass did not complete: {done:?}")
        };
        for key in ["branch", "r", "t", "when", "text"] {
            assert_eq!(result[key], asked[key], "{name} run {run}: {key}");
        }
        let after = result["after"].as_i64().unwrap();
        assert!(after >= result["t"].as_i64().unwrap(), "{name} run {run}");
        *branches
            .entry(result["branch"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    println!("{name}: 20 of 20 runs kept their branch after approval: {branches:?}");
}

/// A step's closure reads the clock and draws in the first pass only; what comes after the
/// step reads, on replay, what it read the first time.
const AFTER_A_STEP: &str = r#"async () => {
  const inside = await codemode.step("inside", () => [Date.now(), Math.random(), Date.now()]);
  const after = [Date.now(), Math.random()];
  await probe.gated_write({ value: { inside, after } });
  return { inside, after };
}"#;

async fn a_step_keeps_what_follows_it_in_place(store: Arc<dyn Store>, name: &str) {
    let runtime = probe_runtime(store, name);
    let outcome = runtime.call(AFTER_A_STEP).await.unwrap();
    let Outcome::Paused {
        execution_id,
        pending,
    } = outcome
    else {
        panic!("{name}: {outcome:?}")
    };
    tokio::time::sleep(Duration::from_millis(3)).await;
    let done = runtime.approve(&execution_id).await.unwrap();
    let Outcome::Completed { result, .. } = done else {
        panic!("{name}: {done:?}")
    };
    assert_eq!(result, pending[0].args["value"], "{name}");
    let recorded = runtime.execution(&execution_id).await.unwrap().unwrap();
    assert_eq!(
        recorded.clock.steps.len(),
        1,
        "{name}: {:?}",
        recorded.clock
    );
    assert_eq!(recorded.clock.readings(), 3, "{name}: {:?}", recorded.clock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_and_chance_replay_across_an_approval_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    twenty_runs_keep_their_branch(store.clone(), "sqlite").await;
    a_step_keeps_what_follows_it_in_place(store, "sqlite-step").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_and_chance_replay_across_an_approval_on_postgres() {
    let Some(db) = codemode_postgres::ScratchDatabase::for_tests("time_and_chance_replay")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = Arc::new(
        codemode_postgres::PostgresStore::connect(db.url())
            .await
            .expect("connect"),
    );
    twenty_runs_keep_their_branch(store.clone(), "postgres").await;
    a_step_keeps_what_follows_it_in_place(store.clone(), "postgres-step").await;
    store.close();
}

/// What a program sees of `Date` and `Math.random` is the engine's, but for where readings
/// come from: arguments, statics, `instanceof`, subclasses and replacements behave as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn date_and_random_behave_as_the_engines_do() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    let runtime = probe_runtime(store, "default");
    let cases: &[(&str, Value)] = &[
        ("new Date(0).toISOString()", "1970-01-01T00:00:00.000Z".into()),
        ("new Date(2020, 0, 2).getFullYear()", 2020.into()),
        ("new Date('2001-02-03T00:00:00Z').getTime()", 981158400000i64.into()),
        ("Date.parse('1970-01-01T00:00:01Z')", 1000.into()),
        ("Date.UTC(1970, 0, 1, 0, 0, 2)", 2000.into()),
        ("Date.name + Date.length", "Date7".into()),
        ("new Date() instanceof Date && Object.getPrototypeOf(new Date()) === Date.prototype", true.into()),
        ("new Date().constructor === Date", true.into()),
        ("typeof Date()", "string".into()),
        ("Math.abs(new Date().getTime() - Date.now()) < 60000", true.into()),
        ("(() => { class Day extends Date { day() { return this.getUTCDate(); } } return new Day(86400000).day() + (new Day() instanceof Date ? 100 : 0); })()", 102.into()),
        ("(() => { const r = Math.random(); return r >= 0 && r < 1; })()", true.into()),
        ("(() => { Date.now = () => 5; return Date.now(); })()", 5.into()),
        ("(() => { Math.random = () => 0.25; return Math.random(); })()", 0.25.into()),
        ("(() => { globalThis.Date = class { static now() { return 7; } }; return Date.now(); })()", 7.into()),
        ("(() => { const d = Date; globalThis.Date = function () { return new d(0); }; return new Date().getTime(); })()", 0.into()),
    ];
    for (expression, expected) in cases {
        let outcome = runtime.call(expression).await.unwrap();
        let Outcome::Completed { result, .. } = outcome else {
            panic!("{expression}: {outcome:?}")
        };
        assert_eq!(&result, expected, "{expression}");
    }
    // A program that replaces them still replays: its replacements are its own business.
    let replaced = r#"async () => {
  const now = Date.now;
  Date.now = () => now() + 1;
  const random = Math.random;
  Math.random = () => random() / 2;
  const v = [Date.now(), Math.random(), new Date().getTime()];
  await probe.gated_write({ value: v });
  return v;
}"#;
    let Outcome::Paused {
        execution_id,
        pending,
    } = runtime.call(replaced).await.unwrap()
    else {
        panic!("no pause")
    };
    tokio::time::sleep(Duration::from_millis(3)).await;
    let done = runtime.approve(&execution_id).await.unwrap();
    let Outcome::Completed { result, .. } = done else {
        panic!("{done:?}")
    };
    assert_eq!(result, pending[0].args["value"]);
}
