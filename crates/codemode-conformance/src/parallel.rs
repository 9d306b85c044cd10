//! Parallel calls under seeded random delays: each program runs live (results arrive in an
//! order the seed decides), pauses for its writes, is approved, and its replay must finish
//! with the result the live history implies, each write applied once.

use codemode::{Outcome, Runtime, RustConnector, RustTool, Store, ToolError};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One program and the result its replay must return (`None`: checked against the log).
pub struct Program {
    /// What it exercises.
    pub name: &'static str,
    /// The model's code.
    pub code: &'static str,
    /// The result, when no delay can change it.
    pub expected: Option<Value>,
    /// How many writes the live pass pauses for, all at once.
    pub pending: usize,
}

/// The programs: fan-out, chains, allSettled with a failing branch, race, a batch of
/// writes, nested Promise.all.
pub fn programs() -> Vec<Program> {
    vec![
        Program {
            name: "fan-out of reads",
            code: "const xs = await Promise.all([1, 2, 3, 4, 5].map((id) => shop.get_item({ id })));
                   await shop.set_item({ id: 0, value: xs.map((x) => x.next) });
                   return xs.map((x) => x.next);",
            expected: Some(json!([10, 20, 30, 40, 50])),
            pending: 1,
        },
        Program {
            name: "chains inside Promise.all",
            code: "return await Promise.all([1, 2, 3, 4].map(async (id) => {
                     const a = await shop.get_item({ id });
                     const d = await shop.get_detail({ id: a.next });
                     return (await shop.set_item({ id, value: d.detail })).value;
                   }));",
            expected: Some(json!(["d10", "d20", "d30", "d40"])),
            pending: 4,
        },
        Program {
            name: "allSettled with a failing branch",
            code: "const r = await Promise.allSettled([1, 2, 3].map((id) => shop.get_item({ id, fail: id === 2 })));
                   const seen = r.map((x) => x.status === 'fulfilled' ? x.value.id : x.reason.message);
                   await shop.set_item({ id: 9, value: seen });
                   return seen;",
            expected: Some(json!([1, "item 2 failed", 3])),
            pending: 1,
        },
        Program {
            name: "race",
            code: "const w = await Promise.race([1, 2, 3].map((id) => shop.get_item({ id })));
                   const more = await shop.get_detail({ id: w.next });
                   await shop.set_item({ id: w.id, value: more.detail });
                   return w.id;",
            expected: None,
            pending: 1,
        },
        Program {
            name: "a batch of writes",
            code: "const done = await Promise.all([1, 2, 3].map((id) => shop.set_item({ id, value: id * 2 })));
                   return done.map((d) => d.value);",
            expected: Some(json!([2, 4, 6])),
            pending: 3,
        },
        Program {
            name: "nested Promise.all",
            code: "const groups = await Promise.all([[1, 2], [3, 4]].map((g) => Promise.all(g.map(async (id) => {
                     const a = await shop.get_item({ id });
                     return (await shop.get_detail({ id: a.next })).detail;
                   }))));
                   await shop.set_item({ id: 7, value: groups });
                   return groups;",
            expected: Some(json!([["d10", "d20"], ["d30", "d40"]])),
            pending: 1,
        },
    ]
}

/// A `shop` whose calls finish after a delay drawn from a seed; it counts writes by key.
#[derive(Clone, Default)]
pub struct Shop {
    seed: u64,
    max_delay_ms: u64,
    writes: Arc<Mutex<BTreeMap<String, u64>>>,
}

/// splitmix64, for delays that depend only on the seed and the call.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Shop {
    /// A shop whose delays come from `seed`, each below `max_delay_ms`.
    pub fn new(seed: u64, max_delay_ms: u64) -> Self {
        Shop {
            seed,
            max_delay_ms,
            writes: Arc::default(),
        }
    }

    /// How many times each write ran, by idempotency key.
    pub fn writes(&self) -> BTreeMap<String, u64> {
        self.writes.lock().map(|w| w.clone()).unwrap_or_default()
    }

    async fn delay(&self, method: &str, args: &Value) {
        if self.max_delay_ms == 0 {
            return;
        }
        let mut h = self.seed;
        for b in method.bytes().chain(args.to_string().bytes()) {
            h = mix(h ^ u64::from(b));
        }
        let micros = mix(h) % (self.max_delay_ms * 1000);
        tokio::time::sleep(Duration::from_micros(micros)).await;
    }

    /// The connector: `get_item`, `get_detail` (reads) and `set_item` (needs approval).
    pub fn connector(&self) -> RustConnector {
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        RustConnector::new("shop")
            .tool(
                RustTool::new("get_item", move |args: Value, _ctx| {
                    let shop = a.clone();
                    async move {
                        shop.delay("get_item", &args).await;
                        let id = args["id"].as_i64().unwrap_or(0);
                        if args["fail"] == json!(true) {
                            return Err(ToolError(format!("item {id} failed")));
                        }
                        Ok(json!({ "id": id, "next": id * 10 }))
                    }
                })
                .read_only(),
            )
            .tool(
                RustTool::new("get_detail", move |args: Value, _ctx| {
                    let shop = b.clone();
                    async move {
                        shop.delay("get_detail", &args).await;
                        let id = args["id"].as_i64().unwrap_or(0);
                        Ok(json!({ "id": id, "detail": format!("d{id}") }))
                    }
                })
                .read_only(),
            )
            .tool(
                RustTool::new(
                    "set_item",
                    move |args: Value, ctx: codemode::CallContext| {
                        let shop = c.clone();
                        async move {
                            shop.delay("set_item", &args).await;
                            if let Ok(mut w) = shop.writes.lock() {
                                *w.entry(ctx.idempotency_key()).or_default() += 1;
                            }
                            Ok(json!({ "id": args["id"], "value": args["value"] }))
                        }
                    },
                )
                .requires_approval(true),
            )
    }
}

/// The number of seeds to run: `CODEMODE_SEEDS`, else `default`.
pub fn seeds(default: u64) -> u64 {
    std::env::var("CODEMODE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs every program under `seed` on `store`; the failures, described.
pub async fn run_seed(
    store: Arc<dyn Store>,
    executor: Arc<dyn codemode::Executor>,
    name: &str,
    seed: u64,
) -> Vec<String> {
    let mut failures = Vec::new();
    for program in programs() {
        let shop = Shop::new(seed, 4);
        let runtime = match Runtime::builder(store.clone(), executor.clone())
            .name(name)
            .connector(shop.connector())
            .build()
        {
            Ok(r) => r,
            Err(e) => return vec![format!("build: {e}")],
        };
        if let Err(e) = run_program(&runtime, &shop, &program).await {
            failures.push(format!("seed {seed}, {}: {e}", program.name));
        }
    }
    failures
}

async fn run_program(runtime: &Runtime, shop: &Shop, program: &Program) -> Result<(), String> {
    let live = runtime
        .call(program.code)
        .await
        .map_err(|e| e.to_string())?;
    let Outcome::Paused {
        execution_id,
        pending,
    } = &live
    else {
        return Err(format!("the live pass did not pause: {live:?}"));
    };
    if pending.len() != program.pending {
        return Err(format!(
            "paused with {} pending, expected {}: {pending:?}",
            pending.len(),
            program.pending
        ));
    }
    let approved = runtime
        .approve(execution_id)
        .await
        .map_err(|e| e.to_string())?;
    let Outcome::Completed { result, .. } = &approved else {
        return Err(format!("the replay did not complete: {approved:?}"));
    };
    let expected = match &program.expected {
        Some(v) => v.clone(),
        // The race: the winner the live pass saw is the one written.
        None => pending
            .first()
            .map(|p| p.args["id"].clone())
            .unwrap_or(Value::Null),
    };
    if *result != expected {
        return Err(format!("result {result} but expected {expected}"));
    }
    let writes = shop.writes();
    if writes.len() < pending.len() || writes.values().any(|n| *n != 1) {
        return Err(format!(
            "each write must run once: {writes:?} for {} pending",
            pending.len()
        ));
    }
    Ok(())
}

/// Connectors that count their calls in flight and keep the high-water mark: `get` (a read
/// that takes `latency`), `hang` (a read that never answers) and `put` (needs approval).
#[derive(Clone, Default)]
pub struct Meter {
    latency: Duration,
    state: Arc<Mutex<MeterState>>,
}

#[derive(Default)]
struct MeterState {
    now: usize,
    high: usize,
    calls: BTreeMap<String, u64>,
}

impl Meter {
    /// A meter whose `get` takes `latency`.
    pub fn new(latency: Duration) -> Self {
        Meter {
            latency,
            state: Arc::default(),
        }
    }

    /// The most calls that were in flight at once, over every connector of this meter.
    pub fn high_water(&self) -> usize {
        self.state.lock().map(|s| s.high).unwrap_or_default()
    }

    /// How many times each method ran (`connector.method`).
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.state
            .lock()
            .map(|s| s.calls.clone())
            .unwrap_or_default()
    }

    fn enter(&self, path: String) {
        if let Ok(mut s) = self.state.lock() {
            s.now += 1;
            s.high = s.high.max(s.now);
            *s.calls.entry(path).or_default() += 1;
        }
    }

    fn leave(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.now -= 1;
        }
    }

    /// The connector `name` over this meter.
    pub fn connector(&self, name: &str) -> RustConnector {
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        let (na, nb, nc) = (name.to_string(), name.to_string(), name.to_string());
        RustConnector::new(name)
            .tool(
                RustTool::new("get", move |args: Value, _ctx| {
                    let (meter, path) = (a.clone(), format!("{na}.get"));
                    async move {
                        meter.enter(path);
                        // The connector's own latency.
                        tokio::time::sleep(meter.latency).await;
                        meter.leave();
                        Ok(args)
                    }
                })
                .read_only(),
            )
            .tool(
                RustTool::new("hang", move |_args: Value, _ctx| {
                    let (meter, path) = (b.clone(), format!("{nb}.hang"));
                    async move {
                        meter.enter(path);
                        futures::future::pending::<()>().await;
                        Ok(Value::Null)
                    }
                })
                .read_only(),
            )
            .tool(
                RustTool::new("put", move |args: Value, _ctx| {
                    let (meter, path) = (c.clone(), format!("{nc}.put"));
                    async move {
                        meter.enter(path);
                        meter.leave();
                        Ok(args)
                    }
                })
                .requires_approval(true),
            )
    }
}
