//! The cost of the process boundary: `cargo bench -p codemode-quickjs --bench process`.
//!
//! Prints medians of a trivial pass and of one awaited host call for the in-process executor
//! (on a sandbox thread, and on the caller's thread as the binary's `isolation = "thread"`)
//! and for `ProcessExecutor`, measured in the same run, taking turns in rounds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode::{ExecuteRequest, Executor, Host, HostCall, HostReply, Namespace, PassEnd};
use codemode_quickjs::{
    ProcessExecutor, ProcessOptions, QuickJsExecutor, QuickJsOptions, WorkerCommand,
};
use futures::future::BoxFuture;
use serde_json::json;

struct FastHost;

impl Host for FastHost {
    fn call(&self, _call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(async { HostReply::Value(json!({"ok": true, "id": 1})) })
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
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

async fn time_one(executor: &dyn Executor, code: &str) -> Duration {
    let started = Instant::now();
    let result = executor.execute(request(code), Arc::new(FastHost)).await;
    let elapsed = started.elapsed();
    assert!(
        matches!(result.end, PassEnd::Returned(_)),
        "{:?}",
        result.end
    );
    elapsed
}

async fn bench() {
    let command = WorkerCommand::new(env!("CARGO_BIN_EXE_codemode-sandbox"), Vec::<String>::new());
    let process = ProcessExecutor::start(QuickJsOptions::default(), ProcessOptions::new(command))
        .await
        .expect("sandbox processes");
    let thread = QuickJsExecutor::new(QuickJsOptions::default());
    let caller = QuickJsExecutor::new(QuickJsOptions::default().with_caller_thread(true));
    let executors: [(&str, &dyn Executor); 3] = [
        ("in-process, sandbox thread", &thread),
        ("in-process, caller's thread", &caller),
        ("ProcessExecutor", &process),
    ];
    let trivial = "async () => 1";
    let calls = 2_000u32;
    let loop_code = format!(
        "async () => {{ let n = 0; for (let i = 0; i < {calls}; i++) n += (await tasks.get({{ i }})).id; return n; }}"
    );
    let mut passes = vec![Vec::new(); executors.len()];
    let mut per_call = vec![Vec::new(); executors.len()];
    for round in 0..12 {
        for (k, (_, executor)) in executors.iter().enumerate() {
            let mut xs = Vec::new();
            for _ in 0..100 {
                xs.push(time_one(*executor, trivial).await);
            }
            let pass = median(xs);
            let total = time_one(*executor, &loop_code).await;
            if round > 0 {
                passes[k].push(pass);
                per_call[k].push(total.saturating_sub(pass) / calls);
            }
        }
    }
    for (k, (label, _)) in executors.iter().enumerate() {
        println!(
            "{label}: trivial pass median {:?}, awaited host call median {:?}",
            median(passes[k].clone()),
            median(per_call[k].clone())
        );
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(bench());
}
