//! Time and chance in the sandbox: the clock tape is read back in order and then the wall
//! clock, new readings reach the host before the call that follows them, `Math.random` draws
//! the same sequence for the same seed, a replayed step skips what its closure read, on a
//! sandbox thread and in a sandbox process. Prints what a trivial pass and 10,000 readings cost.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use codemode::{
    ClockRun, ClockTape, ExecuteRequest, Executor, Host, HostCall, HostReply, PassClock,
};
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{namespaces, process_executor, returned};
use futures::future::BoxFuture;
use serde_json::{json, Value};

/// What the host saw, in order: clock readings and calls.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Clock(Vec<ClockRun>),
    Call(String),
}

/// Records readings and calls; answers `codemode.step` as replayed with `step` when set.
struct ClockHost {
    seen: Mutex<Vec<Seen>>,
    step: Option<Value>,
}

impl ClockHost {
    fn new(step: Option<Value>) -> Arc<Self> {
        Arc::new(ClockHost {
            seen: Mutex::new(Vec::new()),
            step,
        })
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn readings(&self) -> ClockTape {
        let mut tape = ClockTape::default();
        for seen in self.seen() {
            if let Seen::Clock(runs) = seen {
                tape.append(&runs);
            }
        }
        tape
    }
}

impl Host for ClockHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        let name = format!("{}.{}", call.namespace, call.method);
        self.seen.lock().unwrap().push(Seen::Call(name.clone()));
        let reply = match (name.as_str(), &self.step) {
            ("codemode.step", Some(replayed)) => HostReply::Value(replayed.clone()),
            ("codemode.step", None) => HostReply::Value(json!({ "replay": false, "seq": 0 })),
            _ => HostReply::Value(Value::Null),
        };
        Box::pin(async move { reply })
    }

    fn clock_readings(&self, runs: &[ClockRun]) {
        self.seen.lock().unwrap().push(Seen::Clock(runs.to_vec()));
    }
}

fn request(code: &str, tape: ClockTape, seed: Option<u64>) -> ExecuteRequest {
    ExecuteRequest {
        code: code.into(),
        namespaces: namespaces(),
        clock: PassClock {
            tape,
            random_seed: seed,
        },
    }
}

const READS: &str = "async () => {
  const a = Date.now();
  const b = new Date().getTime();
  await tasks.get({ a, b });
  const c = Date.now();
  return [a, b, c, Math.random(), Math.random()];
}";

async fn the_tape_then_the_wall_clock(executor: &dyn Executor, on: &str) {
    // First pass: every reading is new, and those before the call reach the host first.
    let host = ClockHost::new(None);
    let first = returned(
        &executor
            .execute(request(READS, ClockTape::default(), Some(7)), host.clone())
            .await,
    );
    let seen = host.seen();
    assert!(
        matches!(&seen[0], Seen::Clock(runs) if runs.iter().map(|r| r.1).sum::<u64>() == 2),
        "{on}: {seen:?}"
    );
    assert_eq!(seen[1], Seen::Call("tasks.get".into()), "{on}");
    assert!(
        matches!(&seen[2], Seen::Clock(_)),
        "{on}: the last reading at the pass's end: {seen:?}"
    );
    let tape = host.readings();
    assert_eq!(tape.readings(), 3, "{on}");

    // A replay reads the tape: the same values, the same draws, nothing new to record.
    let replay_host = ClockHost::new(None);
    let again = returned(
        &executor
            .execute(request(READS, tape.clone(), Some(7)), replay_host.clone())
            .await,
    );
    assert_eq!(again, first, "{on}");
    assert_eq!(
        replay_host.seen(),
        vec![Seen::Call("tasks.get".into())],
        "{on}"
    );

    // Another seed draws otherwise; a tape cut short is read, then the clock (never earlier).
    let short = ClockTape {
        now: vec![ClockRun(tape.now[0].0, 1)],
        steps: vec![],
    };
    let other = returned(
        &executor
            .execute(request(READS, short, Some(8)), ClockHost::new(None))
            .await,
    );
    assert_eq!(other[0], first[0], "{on}");
    assert!(other[1].as_i64() >= first[0].as_i64(), "{on}");
    assert_ne!(other[3], first[3], "{on}: another seed");
}

const STEP: &str = "async () => {
  const inside = await codemode.step('s', () => [Date.now(), Math.random()]);
  return [inside, Date.now(), Math.random()];
}";

async fn a_replayed_step_skips_its_readings(executor: &dyn Executor, on: &str) {
    let host = ClockHost::new(None);
    let first = returned(
        &executor
            .execute(request(STEP, ClockTape::default(), Some(3)), host.clone())
            .await,
    );
    let calls: Vec<_> = host
        .seen()
        .into_iter()
        .filter(|s| matches!(s, Seen::Call(_)))
        .collect();
    assert_eq!(
        calls,
        vec![
            Seen::Call("codemode.step".into()),
            Seen::Call("codemode.step_result".into())
        ],
        "{on}"
    );
    let tape = host.readings();
    // The host answers the replayed step with its value and where its closure ended.
    let replayed = json!({ "replay": true, "value": first[0], "clock": [1, 1] });
    let again = returned(
        &executor
            .execute(request(STEP, tape, Some(3)), ClockHost::new(Some(replayed)))
            .await,
    );
    assert_eq!(again, first, "{on}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_and_chance_replay_on_a_thread_and_in_a_process() {
    let threads = QuickJsExecutor::new(QuickJsOptions::default());
    the_tape_then_the_wall_clock(&threads, "thread").await;
    a_replayed_step_skips_its_readings(&threads, "thread").await;
    let processes = process_executor(QuickJsOptions::default(), |p| p).await;
    the_tape_then_the_wall_clock(&processes, "process").await;
    a_replayed_step_skips_its_readings(&processes, "process").await;
}

/// What a trivial pass costs, and 10,000 readings of each kind (debug build; a figure, not a
/// threshold: the machine is shared).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_of_a_trivial_pass_and_of_many_readings() {
    let executor = QuickJsExecutor::new(QuickJsOptions::default());
    let host = ClockHost::new(None);
    let time = |label: &str, n: u32, started: Instant| {
        println!(
            "{label}: {:.1} µs",
            started.elapsed().as_secs_f64() * 1e6 / f64::from(n)
        );
    };
    for _ in 0..50 {
        executor
            .execute(request("1", ClockTape::default(), Some(1)), host.clone())
            .await;
    }
    let started = Instant::now();
    for _ in 0..500 {
        executor
            .execute(request("1", ClockTape::default(), Some(1)), host.clone())
            .await;
    }
    time("a trivial pass", 500, started);
    for (label, code) in [
        (
            "10,000 Date.now() (new readings), per pass",
            "let t = 0; for (let i = 0; i < 10000; i++) t = Date.now(); t",
        ),
        (
            "10,000 Math.random(), per pass",
            "let t = 0; for (let i = 0; i < 10000; i++) t += Math.random(); t",
        ),
        (
            "10,000 empty loop turns, per pass",
            "let t = 0; for (let i = 0; i < 10000; i++) t += i; t",
        ),
    ] {
        let started = Instant::now();
        for _ in 0..20 {
            returned(
                &executor
                    .execute(request(code, ClockTape::default(), Some(1)), host.clone())
                    .await,
            );
        }
        time(label, 20, started);
    }
    // Replaying 10,000 readings from a tape of one run per millisecond over ten seconds.
    let tape = ClockTape {
        now: (0..10_000)
            .map(|i| ClockRun(1_700_000_000_000 + i, 1))
            .collect(),
        steps: vec![],
    };
    let code = "let t = 0; for (let i = 0; i < 10000; i++) t = Date.now(); t";
    let started = Instant::now();
    for _ in 0..20 {
        let last = returned(
            &executor
                .execute(request(code, tape.clone(), Some(1)), host.clone())
                .await,
        );
        assert_eq!(last, json!(1_700_000_009_999i64));
    }
    time(
        "10,000 Date.now() replayed from a tape, per pass",
        20,
        started,
    );
}
