//! Sandbox benchmarks: `cargo bench -p codemode-quickjs`.
//!
//! Prints medians for: a fresh context running `async () => 1` end to end; the overhead of
//! one awaited host call (polled on the sandbox thread, and for comparison a host that hops
//! through `tokio::spawn`); a 10 KB JSON argument and result round trip; and the memory of
//! live sandboxes (100 passes in flight at once).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode::{ExecuteRequest, Executor, Host, HostCall, HostReply, Namespace, PassEnd};
use codemode_quickjs::QuickJsExecutor;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

/// Answers every call at once with a small object, or echoes the arguments.
struct FastHost {
    echo: bool,
}

impl Host for FastHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        let reply = if self.echo {
            HostReply::Value(call.args)
        } else {
            HostReply::Value(json!({"ok": true, "id": 1}))
        };
        Box::pin(async move { reply })
    }
}

/// Answers through `tokio::spawn`, the alternative to polling on the sandbox thread.
struct SpawningHost;

impl Host for SpawningHost {
    fn call(&self, _call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(async move {
            tokio::spawn(async { HostReply::Value(json!({"ok": true, "id": 1})) })
                .await
                .unwrap_or(HostReply::Abort)
        })
    }
}

/// Holds every call until released, counting the calls in flight.
struct GateHost {
    gate: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
}

impl Host for GateHost {
    fn call(&self, _call: HostCall) -> BoxFuture<'_, HostReply> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let gate = self.gate.clone();
        Box::pin(async move {
            let _permit = gate.acquire().await;
            HostReply::Value(json!(1))
        })
    }
}

fn request(code: &str) -> ExecuteRequest {
    ExecuteRequest {
        code: code.to_string(),
        namespaces: vec![Namespace {
            name: "tasks".into(),
            methods: vec!["get".into()],
            ..Default::default()
        }],
        clock: Default::default(),
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

async fn time_one(executor: &QuickJsExecutor, code: &str, host: Arc<dyn Host>) -> Duration {
    let started = Instant::now();
    let result = executor.execute(request(code), host).await;
    let elapsed = started.elapsed();
    assert!(
        matches!(result.end, PassEnd::Returned(_)),
        "{:?}",
        result.end
    );
    elapsed
}

fn rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn parts() {
    let time = |label: &str, f: &mut dyn FnMut()| {
        let mut xs = Vec::new();
        for _ in 0..300 {
            let t = Instant::now();
            f();
            xs.push(t.elapsed());
        }
        println!("  part: {label}: median {:?}", median(xs));
    };
    time("normalize `async () => 1`", &mut || {
        let _ = codemode_quickjs::normalize("async () => 1", 1_000_000);
    });
    time("new runtime + full context", &mut || {
        let rt = rquickjs::Runtime::new().unwrap();
        let _ctx = rquickjs::Context::full(&rt).unwrap();
    });
    let rt = rquickjs::Runtime::new().unwrap();
    let ctx = rquickjs::Context::full(&rt).unwrap();
    let glue = include_str!("../src/glue.js");
    let mk = "const items = []; for (let i = 0; i < 100; i++) items.push({ id: i, title: 'task number ' + i, done: i % 2 === 0, tags: ['a', 'b'] }); const arg = { items };";
    for (label, body) in [
        ("stringify 6 KB x100 with a replacer", "for (let r = 0; r < 100; r++) JSON.stringify(arg, (k, v) => (typeof v === 'bigint' ? 1 : (typeof v === 'object' && v instanceof Uint8Array) ? 2 : v));"),
        ("stringify 6 KB x100 plain", "for (let r = 0; r < 100; r++) JSON.stringify(arg);"),
        ("parse 6 KB x100", "const t = JSON.stringify(arg); for (let r = 0; r < 100; r++) JSON.parse(t);"),
    ] {
        let src = format!("{{ {mk}{body} }}");
        time(label, &mut || {
            ctx.with(|ctx| {
                let _: rquickjs::Value = ctx.eval(src.as_str()).unwrap();
            })
        });
    }
    for code in [
        "async () => 1",
        "return await tasks.create_task({ title: 'bench' })",
    ] {
        let wrapped = codemode_quickjs::normalize(code, 1_000_000).unwrap().source;
        time(&format!("compile `{code}` (wrapped)"), &mut || {
            ctx.with(|ctx| {
                let _: rquickjs::Value = ctx.eval(wrapped.as_str()).unwrap();
            })
        });
    }
    time("compile the glue script", &mut || {
        ctx.with(|ctx| {
            let _: rquickjs::Value = ctx.eval(glue).unwrap();
        })
    });
}

async fn bench() {
    parts();
    let executor = Arc::new(QuickJsExecutor::default());
    let fast: Arc<dyn Host> = Arc::new(FastHost { echo: false });

    for _ in 0..200 {
        time_one(&executor, "async () => 1", fast.clone()).await;
    }
    let mut paced = Vec::new();
    for _ in 0..500 {
        tokio::time::sleep(Duration::from_millis(2)).await;
        paced.push(time_one(&executor, "async () => 1", fast.clone()).await);
    }
    let trivial = median(paced);
    println!("fresh context + `async () => 1`, end to end (paced 2 ms apart): median {trivial:?} (goal <= 300 µs)");
    let mut back_to_back = Vec::new();
    for _ in 0..500 {
        back_to_back.push(time_one(&executor, "async () => 1", fast.clone()).await);
    }
    println!("  back to back: median {:?}", median(back_to_back));

    let calls = 10_000u32;
    let loop_code = format!("async () => {{ let n = 0; for (let i = 0; i < {calls}; i++) n += (await tasks.get({{ i }})).id; return n; }}");
    let mut per_call = Vec::new();
    for _ in 0..7 {
        let total = time_one(&executor, &loop_code, fast.clone()).await;
        per_call.push(total.saturating_sub(trivial) / calls);
    }
    println!(
        "awaited host call (polled on the sandbox thread), {calls} calls: median {:?} per call (goal <= 5 µs)",
        median(per_call)
    );
    let spawning: Arc<dyn Host> = Arc::new(SpawningHost);
    let mut per_call = Vec::new();
    for _ in 0..5 {
        let total = time_one(&executor, &loop_code, spawning.clone()).await;
        per_call.push(total.saturating_sub(trivial) / calls);
    }
    println!(
        "  for comparison, a host answering through tokio::spawn: median {:?} per call",
        median(per_call)
    );

    let echo: Arc<dyn Host> = Arc::new(FastHost { echo: true });
    let rounds = 1_000u32;
    let big_code = format!(
        "async () => {{ const items = []; for (let i = 0; i < 100; i++) items.push({{ id: i, title: 'task number ' + i, done: i % 2 === 0, tags: ['a', 'b'] }}); \
         const arg = {{ items }}; let size = 0; for (let r = 0; r < {rounds}; r++) size = (await tasks.get(arg)).items.length; return JSON.stringify(arg).length; }}"
    );
    let size = match executor.execute(request(&big_code), echo.clone()).await.end {
        PassEnd::Returned(Value::Number(n)) => n.as_u64().unwrap_or(0),
        other => panic!("{other:?}"),
    };
    let mut per_round = Vec::new();
    for _ in 0..5 {
        let total = time_one(&executor, &big_code, echo.clone()).await;
        per_round.push(total.saturating_sub(trivial) / rounds);
    }
    println!(
        "{:.1} KB JSON argument + result round trip: median {:?} per call",
        size as f64 / 1000.0,
        median(per_round)
    );

    let live = 100usize;
    let gate = Arc::new(Semaphore::new(0));
    let waiting = Arc::new(AtomicUsize::new(0));
    let host: Arc<dyn Host> = Arc::new(GateHost {
        gate: gate.clone(),
        waiting: waiting.clone(),
    });
    // Warm the thread pool so the thread stacks are not counted as sandbox memory; what the
    // threads then keep between passes (each its runtime and the copy that puts it back) is
    // printed on its own.
    let cold = rss_kib();
    let warm: Vec<_> = (0..live)
        .map(|_| {
            let executor = executor.clone();
            let host = host.clone();
            tokio::spawn(async move {
                executor
                    .execute(request("async () => await tasks.get({})"), host)
                    .await
            })
        })
        .collect();
    while waiting.load(Ordering::SeqCst) < live {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    gate.add_permits(live);
    for w in warm {
        let _ = w.await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let gate = Arc::new(Semaphore::new(0));
    waiting.store(0, Ordering::SeqCst);
    let host: Arc<dyn Host> = Arc::new(GateHost {
        gate: gate.clone(),
        waiting: waiting.clone(),
    });
    let before = rss_kib();
    println!(
        "{live} idle sandbox threads keep +{:.1} MiB resident (their stacks, runtimes and copies: {:.0} KiB each)",
        before.saturating_sub(cold) as f64 / 1024.0,
        before.saturating_sub(cold) as f64 / live as f64
    );
    let code = "async () => { const data = []; for (let i = 0; i < 100; i++) data.push({ i, s: 'x' + i }); return (await tasks.get({ n: data.length })) + data.length; }";
    let handles: Vec<_> = (0..live)
        .map(|_| {
            let executor = executor.clone();
            let host = host.clone();
            tokio::spawn(async move { executor.execute(request(code), host).await })
        })
        .collect();
    while waiting.load(Ordering::SeqCst) < live {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let during = rss_kib();
    gate.add_permits(live);
    for h in handles {
        let r = h.await.expect("pass");
        assert!(matches!(r.end, PassEnd::Returned(_)), "{:?}", r.end);
    }
    let delta = during.saturating_sub(before);
    println!(
        "{live} sandboxes live at once: +{:.1} MiB resident over idle ({:.0} KiB per live context; process total {:.1} MiB; goal <= 200 MiB for 100)",
        delta as f64 / 1024.0,
        delta as f64 / live as f64,
        during as f64 / 1024.0
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(bench());
}
