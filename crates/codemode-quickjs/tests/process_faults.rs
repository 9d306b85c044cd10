//! The process executor's parent side: cancel, broken or dead processes, processes that will
//! not start, confinement; and the behaviour a pass's code sees is the in-process one.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::{Executor, Host, HostCall, HostReply, PassEnd};
use codemode_quickjs::{
    ProcessExecutor, ProcessOptions, QuickJsExecutor, QuickJsOptions, SandboxStartError,
    WorkerCommand,
};
use common::{failure, process_executor, returned, run_on, TestHost};
use futures::future::BoxFuture;
use serde_json::{json, Value};

/// A host whose calls sleep `args.ms` before answering `args`, with a stop flag.
struct SlowHost {
    calls: Mutex<Vec<HostCall>>,
    stop: Arc<AtomicBool>,
}

impl SlowHost {
    fn new() -> Arc<Self> {
        Arc::new(SlowHost {
            calls: Mutex::new(Vec::new()),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Host for SlowHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        self.calls.lock().unwrap().push(call.clone());
        let ms = call.args["ms"].as_u64().unwrap_or(0);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            HostReply::Value(call.args)
        })
    }

    fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        Some(self.stop.clone())
    }
}

fn misbehaving(how: &str) -> WorkerCommand {
    WorkerCommand::new(
        env!("CARGO_BIN_EXE_codemode-sandbox"),
        [format!("misbehave={how}")],
    )
}

async fn start(command: WorkerCommand) -> Result<ProcessExecutor, SandboxStartError> {
    ProcessExecutor::start(
        QuickJsOptions::default().with_wall_time(Duration::from_secs(5)),
        ProcessOptions::new(command).with_warm(1),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_process_cannot_open_a_socket_a_file_or_a_process() {
    let executor = process_executor(QuickJsOptions::default(), |p| p).await;
    let report = executor.probe().await.unwrap();
    assert_eq!(report.socket, libc::EPERM, "socket: {report:?}");
    assert_eq!(report.open, libc::EPERM, "open: {report:?}");
    assert_eq!(report.fork, libc::EPERM, "fork: {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_runaway_within_a_second() {
    let options = QuickJsOptions::default().with_wall_time(Duration::from_secs(30));
    let executor = process_executor(options, |p| p.with_warm(1)).await;
    let bodies = [
        // Stuck in C: only killing the process ends it.
        "let n = 0; const o = { get length() { return n++ === 0 ? 0 : 2**53 - 1; } }; Array.prototype.reverse.call(o);",
        // Plain JavaScript: the process stops it itself.
        "for (;;) {}",
    ];
    for body in bodies {
        let host = SlowHost::new();
        let stop = host.stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            stop.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let result = run_on(&executor, &format!("async () => {{ {body} }}"), host).await;
        let elapsed = started.elapsed();
        assert_eq!(
            failure(&result),
            "The execution was cancelled by the caller."
        );
        assert!(elapsed < Duration::from_millis(1300), "{body}: {elapsed:?}");
        let after = run_on(&executor, "return 7", TestHost::echo()).await;
        assert_eq!(returned(&after), json!(7));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_breaks_the_protocol_or_dies_fails_the_pass_cleanly() {
    let cases = [
        ("garbage", "not part of the protocol"),
        ("huge", "accepted"),
        (
            "die",
            "The sandbox process died during the pass (killed by signal 6)",
        ),
    ];
    for (how, expected) in cases {
        let executor = start(misbehaving(how)).await.unwrap();
        let started = Instant::now();
        let result = run_on(&executor, "return 1", TestHost::echo()).await;
        let message = failure(&result);
        assert!(message.contains(expected), "{how}: {message}");
        assert!(started.elapsed() < Duration::from_secs(2), "{how}");
        // A new process took the broken one's place.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(executor.processes(), 1, "{how}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_will_not_start_is_a_typed_error() {
    let missing = start(WorkerCommand::new("/nonexistent/codemode", ["x"])).await;
    assert!(
        matches!(missing, Err(SandboxStartError::Spawn { .. })),
        "{missing:?}"
    );
    let not_a_worker = start(WorkerCommand::new("/bin/true", Vec::<String>::new())).await;
    let message = not_a_worker.as_ref().map(|_| ()).unwrap_err().to_string();
    assert!(
        matches!(not_a_worker, Err(SandboxStartError::Handshake { .. }))
            && message.contains("exited with code 0"),
        "{message}"
    );
}

/// What a pass did: how it ended, its console lines, and the host calls it made.
type Seen = (PassEnd, Vec<String>, Vec<Value>);

async fn seen(
    executor: &dyn Executor,
    code: &str,
    host: Arc<dyn Host>,
    calls: impl Fn() -> Vec<HostCall>,
) -> Seen {
    let result = run_on(executor, code, host).await;
    let calls = calls()
        .into_iter()
        .map(|c| json!([c.namespace, c.method, c.args]))
        .collect();
    (result.end, result.logs, calls)
}

fn answer(call: &HostCall) -> HostReply {
    match (call.namespace.as_str(), call.method.as_str()) {
        ("codemode", "run") => HostReply::RunCode {
            code: "```ts\nconst r: any = await tasks.get({ id: input.id });\nreturn r.args.id * 2;\n```".into(),
            input: call.args["input"].clone(),
        },
        (_, "create_task") => HostReply::Abort,
        (_, "list_tasks") => HostReply::Throw("no tasks today".into()),
        _ => HostReply::Value(json!({"args": call.args})),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_sees_the_same_host_in_a_process_as_in_process() {
    let in_process = QuickJsExecutor::new(QuickJsOptions::default());
    let process = process_executor(QuickJsOptions::default(), |p| p.with_warm(1)).await;
    let immediate = [
        "async () => { console.log('a', 1); console.warn({b: 2}); return await tasks.get({id: 1}); }",
        "async () => { try { await tasks.list_tasks(); } catch (e) { return e.message; } }",
        "async () => await codemode.run('double', { id: 21 })",
        "async () => { try { await tasks.create_task({}); } finally { console.log('finally'); } }",
        "async () => { await Promise.allSettled([tasks.get({n: 1}), tasks.create_task({n: 2})]); await tasks.get({n: 3}); }",
        "async () => { const r = await Promise.all([1, 2, 3].map(id => tasks.get({id}))); return r.map(x => x.args.id); }",
        "async () => { throw new TypeError('bad ' + 1); }",
        "async () => ({ big: 2n ** 70n, bytes: new Uint8Array([1, 2]), u: undefined, d: new Date(0) })",
        "return await tasks.get({ id: 'x'.repeat(100000) }).then(r => r.args.id.length)",
    ];
    for code in immediate {
        let host = TestHost::new(answer);
        let a = seen(&in_process, code, host.clone(), || host.calls()).await;
        let host = TestHost::new(answer);
        let b = seen(&process, code, host.clone(), || host.calls()).await;
        assert_eq!(a, b, "{code}");
    }
    // Replies reach the code in the order their futures finish, in both.
    let code = "async () => { const order = []; await Promise.all([30, 5, 15, 0].map(ms => tasks.get({ms}).then(r => order.push(r.ms)))); return order; }";
    for executor in [&in_process as &dyn Executor, &process] {
        let host = SlowHost::new();
        let result = run_on(executor, code, host.clone()).await;
        assert_eq!(returned(&result), json!([0, 5, 15, 30]));
        let made: Vec<Value> = host
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.args["ms"].clone())
            .collect();
        assert_eq!(
            made,
            vec![json!(30), json!(5), json!(15), json!(0)],
            "calls are made in order"
        );
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trivial_pass_stays_quick_while_four_runaways_run() {
    let options = QuickJsOptions::default().with_wall_time(Duration::from_secs(8));
    let executor = Arc::new(process_executor(options, |p| p.with_warm(6)).await);
    let runaway = "async () => { let n = 0; const o = { get length() { return n++ === 0 ? 0 : 2**53 - 1; } }; Array.prototype.reverse.call(o); }";
    let mut running = Vec::new();
    for _ in 0..4 {
        let executor = executor.clone();
        running.push(tokio::spawn(async move {
            run_on(&*executor, runaway, TestHost::echo()).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut times = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let result = run_on(&*executor, "return 1", TestHost::echo()).await;
        times.push(started.elapsed());
        assert_eq!(returned(&result), json!(1));
    }
    times.sort();
    let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
    println!(
        "trivial pass beside four runaways on {} cores: p50 {p50:?}, p99 {p99:?}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for run in running {
        let ended = run.await.unwrap();
        assert!(failure(&ended).starts_with("Time limit"));
    }
    assert!(p50 < Duration::from_millis(50), "p50 {p50:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_grow_on_demand_and_idle_extras_end() {
    let executor = Arc::new(
        process_executor(QuickJsOptions::default(), |p| {
            p.with_warm(1)
                .with_max_processes(3)
                .with_idle_timeout(Duration::from_millis(200))
        })
        .await,
    );
    let runs: Vec<_> = (0..5)
        .map(|i| {
            let executor = executor.clone();
            tokio::spawn(async move {
                let host = SlowHost::new();
                run_on(
                    &*executor,
                    &format!("return (await tasks.get({{ms: 300, i: {i}}})).i"),
                    host,
                )
                .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(executor.processes(), 3, "grown to the most allowed");
    for (i, run) in runs.into_iter().enumerate() {
        assert_eq!(returned(&run.await.unwrap()), json!(i));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(executor.processes(), 1, "idle extras ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_replies_and_console_lines_cross_the_pipes_at_once() {
    // Replies larger than a pipe wait for the process while it writes console lines larger
    // than a pipe: neither side may block the other.
    let options = QuickJsOptions::default()
        .with_wall_time(Duration::from_secs(20))
        .with_max_console_bytes(4 << 20);
    let executor = process_executor(options, |p| p.with_warm(1)).await;
    let host = TestHost::new(|c| {
        let n = c.args["n"].as_u64().unwrap_or(0) as usize;
        HostReply::Value(json!("r".repeat(n)))
    });
    let code = "async () => {
        const calls = [1, 2, 3, 4].map(() => tasks.get({ n: 1000000 }));
        let total = 0;
        for (const call of calls) {
            total += (await call).length;
            for (let i = 0; i < 1000; i++) console.log('x'.repeat(500));
        }
        return total;
    }";
    let result = run_on(&executor, code, host).await;
    assert_eq!(returned(&result), json!(4_000_000));
    assert_eq!(result.logs.len(), 4000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_that_ends_while_a_large_reply_is_on_its_way_leaves_its_process_usable() {
    let options = QuickJsOptions::default().with_wall_time(Duration::from_secs(5));
    let executor = process_executor(options, |p| p.with_warm(1).with_max_processes(1)).await;
    // The late reply is written while the pass computes (it fills the pipe) and the pass
    // fails before it reads it: the process must not start its next pass inside it.
    let code = "async () => {
        const late = tasks.get({ ms: 20, pad: 'x'.repeat(1000000) });
        await tasks.get({ ms: 0 });
        const until = Date.now() + 200;
        while (Date.now() < until) {}
        throw new Error('done');
    }";
    for _ in 0..3 {
        let result = run_on(&executor, code, SlowHost::new()).await;
        assert!(failure(&result).contains("done"), "{}", failure(&result));
        let after = run_on(&executor, "return 7", TestHost::echo()).await;
        assert_eq!(returned(&after), json!(7));
    }
}
