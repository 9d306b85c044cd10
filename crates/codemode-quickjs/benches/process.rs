//! The cost of the process boundary: `cargo bench -p codemode-quickjs --bench process`.
//!
//! Prints medians of a trivial pass and of one awaited host call (in loops of 100 and of 1,000
//! sequential calls, less the trivial pass) for the in-process executor (on a sandbox thread,
//! and on the caller's thread as the binary's `isolation = "thread"`) and for
//! `ProcessExecutor`, measured in the same run, taking turns in rounds: wall time, and CPU
//! time of this process and of its sandbox processes. `BENCH_ROUNDS` sets the rounds (8);
//! `CODEMODE_SANDBOX_BIN` the sandbox program (to compare builds); `BENCH_ONLY` a part of
//! the label of the executors to measure.

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
        clock: Default::default(),
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// CPU time this process has used (every thread), from `getrusage(RUSAGE_SELF)`.
#[allow(unsafe_code)]
fn own_cpu() -> Duration {
    // SAFETY: `usage` is a plain struct the call fills in.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// CPU time the live children of this process have used (every thread, from
/// `/proc/<pid>/task/*/schedstat`, in nanoseconds): the sandbox processes, not yet reaped, so
/// `RUSAGE_CHILDREN` does not count them.
fn children_cpu() -> Duration {
    let me = std::process::id().to_string();
    let mut nanos = 0u64;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // The parent's pid is the second field after the command's closing parenthesis.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if after.split_whitespace().nth(1) != Some(me.as_str()) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(path.join("task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(line) = std::fs::read_to_string(task.path().join("schedstat")) {
                nanos += line
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(nanos)
}

/// Wall time and CPU time (this process and its sandbox processes) of something measured.
#[derive(Clone, Copy, Default)]
struct Cost {
    wall: Duration,
    cpu: Duration,
    /// The sandbox processes' share of `cpu`.
    children: Duration,
}

impl Cost {
    fn per(self, n: u32) -> Cost {
        Cost {
            wall: self.wall / n,
            cpu: self.cpu / n,
            children: self.children / n,
        }
    }

    fn minus(self, other: Cost) -> Cost {
        Cost {
            wall: self.wall.saturating_sub(other.wall),
            cpu: self.cpu.saturating_sub(other.cpu),
            children: self.children.saturating_sub(other.children),
        }
    }
}

fn median_cost(xs: &[Cost]) -> Cost {
    Cost {
        wall: median(xs.iter().map(|c| c.wall).collect()),
        cpu: median(xs.iter().map(|c| c.cpu).collect()),
        children: median(xs.iter().map(|c| c.children).collect()),
    }
}

async fn run_once(executor: &dyn Executor, code: &str) {
    let result = executor.execute(request(code), Arc::new(FastHost)).await;
    assert!(
        matches!(result.end, PassEnd::Returned(_)),
        "{:?}",
        result.end
    );
}

/// The cost of `times` runs of `code`, per run.
async fn measure(executor: &dyn Executor, code: &str, times: u32) -> Cost {
    // The children are read first and last, so that reading `/proc` is not counted.
    let children_before = children_cpu();
    let own_before = own_cpu();
    let started = Instant::now();
    for _ in 0..times {
        run_once(executor, code).await;
    }
    let wall = started.elapsed();
    let own = own_cpu().saturating_sub(own_before);
    let children = children_cpu().saturating_sub(children_before);
    Cost {
        wall,
        cpu: own + children,
        children,
    }
    .per(times)
}

fn loop_code(calls: u32) -> String {
    format!(
        "async () => {{ let n = 0; for (let i = 0; i < {calls}; i++) n += (await tasks.get({{ i }})).id; return n; }}"
    )
}

async fn bench() {
    let program = std::env::var_os("CODEMODE_SANDBOX_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_codemode-sandbox").into());
    let command = WorkerCommand::new(program, Vec::<String>::new());
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
    // `BENCH_ONLY=Process` measures the executors whose label holds that text.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let executors: Vec<(&str, &dyn Executor)> = executors
        .into_iter()
        .filter(|(label, _)| label.contains(only.as_str()))
        .collect();
    let rounds: u32 = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(8);
    let trivial = "async () => 1";
    let loops = [100u32, 1_000];
    let mut passes = vec![Vec::new(); executors.len()];
    let mut per_call = vec![vec![Vec::new(); loops.len()]; executors.len()];
    for round in 0..=rounds {
        for (k, (_, executor)) in executors.iter().enumerate() {
            let pass = measure(*executor, trivial, 100).await;
            let mut calls = Vec::new();
            for &n in &loops {
                let times = (2_000 / n).max(1);
                calls.push(
                    measure(*executor, &loop_code(n), times)
                        .await
                        .minus(pass)
                        .per(n),
                );
            }
            // The first round warms up.
            if round > 0 {
                passes[k].push(pass);
                for (j, c) in calls.into_iter().enumerate() {
                    per_call[k][j].push(c);
                }
            }
        }
    }
    println!("medians of {rounds} rounds; CPU counts this process and its sandbox processes");
    for (k, (label, _)) in executors.iter().enumerate() {
        let pass = median_cost(&passes[k]);
        println!(
            "{label}: trivial pass wall {:?} cpu {:?} (sandbox processes {:?})",
            pass.wall, pass.cpu, pass.children
        );
        for (j, n) in loops.iter().enumerate() {
            let call = median_cost(&per_call[k][j]);
            println!(
                "  awaited host call, loop of {n}: wall {:?} cpu {:?} (sandbox processes {:?}) per call",
                call.wall, call.cpu, call.children
            );
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // On a worker, as the server runs its executions (not on the `block_on` thread, which a
    // worker would have to wake for every frame).
    let bench = runtime.spawn(bench());
    runtime.block_on(bench).expect("the bench ran");
}
