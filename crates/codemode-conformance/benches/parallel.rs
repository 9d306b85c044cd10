//! Parallel calls: 20 reads of a connector that takes 50 ms, one after another and in
//! Promise.all; and the cost of an approval pass that replays 100 recorded reads made in
//! parallel against 100 made one after another. Prints medians.
//!
//! `cargo bench -p codemode-conformance --bench parallel`

use codemode::{Outcome, Runtime, Store};
use codemode_conformance::parallel::Meter;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 5;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn runtime(store: &Arc<dyn Store>, name: &str, meter: &Meter, cap: Option<usize>) -> Runtime {
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let mut b = Runtime::builder(store.clone(), executor)
        .name(name)
        .connector(meter.connector("m"));
    if let Some(cap) = cap {
        b = b.max_in_flight(cap);
    }
    b.build().unwrap()
}

async fn time_call(rt: &Runtime, code: &str) -> Duration {
    let mut xs = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let o = rt.call(code).await.unwrap();
        xs.push(t.elapsed());
        assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    }
    median(xs)
}

/// The median time of the approval pass of `code` (which pauses once, at its end).
async fn time_replay(rt: &Runtime, code: &str) -> Duration {
    let mut xs = Vec::new();
    for _ in 0..RUNS + 1 {
        let paused = rt.call(code).await.unwrap();
        assert!(matches!(paused, Outcome::Paused { .. }), "{paused:?}");
        let t = Instant::now();
        let o = rt.approve(paused.execution_id()).await.unwrap();
        xs.push(t.elapsed());
        assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    }
    xs.remove(0); // warm-up
    median(xs)
}

const SEQ_20: &str =
    "const xs = []; for (let i = 0; i < 20; i++) xs.push(await m.get({ i })); return xs.length;";
const PAR_20: &str = "const xs = await Promise.all(Array.from({ length: 20 }, (_, i) => m.get({ i }))); return xs.length;";
const SEQ_100: &str = "const xs = []; for (let i = 0; i < 100; i++) xs.push(await m.get({ i }));
                       await m.put({ n: xs.length }); return xs.length;";
const PAR_100: &str =
    "const xs = await Promise.all(Array.from({ length: 100 }, (_, i) => m.get({ i })));
                       await m.put({ n: xs.length }); return xs.length;";

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("bench.db")).unwrap());
    tokio.block_on(async {
        let latency = Duration::from_millis(50);
        let meter = Meter::new(latency);
        let wide = runtime(&store, "wide", &meter, Some(20));
        let capped = runtime(&store, "capped", &meter, None);
        let one = time_call(&wide, "return (await m.get({ i: 0 })).i;").await;
        let seq = time_call(&wide, SEQ_20).await;
        let par = time_call(&wide, PAR_20).await;
        let par8 = time_call(&capped, PAR_20).await;
        println!("20 reads of a 50 ms connector (median of {RUNS}):");
        println!(
            "  one call                              {:>8.1} ms",
            ms(one)
        );
        println!(
            "  sequential                            {:>8.1} ms",
            ms(seq)
        );
        println!(
            "  Promise.all, max_in_flight 20         {:>8.1} ms ({:.2}x one call; goal <= 1.5x)",
            ms(par),
            par.as_secs_f64() / one.as_secs_f64()
        );
        println!(
            "  Promise.all, default max_in_flight 8  {:>8.1} ms",
            ms(par8)
        );

        let fast = Meter::new(Duration::ZERO);
        let rt = runtime(&store, "replay", &fast, Some(100));
        let seq = time_replay(&rt, SEQ_100).await;
        let par = time_replay(&rt, PAR_100).await;
        println!("approval pass replaying 100 recorded reads, then one write (median of {RUNS}):");
        println!(
            "  recorded sequentially                 {:>8.2} ms",
            ms(seq)
        );
        println!(
            "  recorded in Promise.all               {:>8.2} ms ({:+.1}%; goal within 20%)",
            ms(par),
            (par.as_secs_f64() / seq.as_secs_f64() - 1.0) * 100.0
        );
    });
}
