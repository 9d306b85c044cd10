//! Server CPU per connector call against the size of one execution, first pass and replay,
//! through HTTP on loopback against `codemode serve` (SQLite, sandbox processes).
//! Run: cargo bench -p codemode-cli --bench scale
//!
//! For each N, one execution makes N reads (`tasks.list_tasks({})`) and then one write that
//! needs approval (`tasks.create_task`), so it pauses with N reads in its log. The first pass
//! is `POST /api/run` until it answers paused; the replay is the approval's
//! `POST /api/executions/ID/approve` until it answers completed: the resumed pass replays the N
//! reads from the log, then runs the write. Each is measured in the server's CPU time (every
//! thread of `serve` and of its sandbox processes, from `/proc`, read once the server is idle
//! again so that work finished after the answer is counted too) and in wall time at the client.
//! Each execution is then rolled back (the task list stays empty, so every read answers the
//! same) and deleted (the store does not grow from one sample to the next).
//!
//! Per call: (the request's CPU − a trivial run's CPU) / N, the trivial run (`async () => 1`)
//! measured the same way in chunks of runs. Marginal: (the request's CPU − the same request
//! with no reads before the write) / N, the cost of one more read with the pause and the
//! approval's own work taken out.
//!
//! The runtime stops an execution at 10,000 calls (its `max_calls`, which the server's config
//! file does not set), the write included: an N of 10,000 or more makes 9,999 reads.
//!
//! `CODEMODE_BENCH_SCALE_N` sets the sizes (default `1,100,1000,10000`);
//! `CODEMODE_BENCH_SCALE_REPEAT` the samples per size (default 3; times 10,000 / reads, from 1
//! to 10 times, so that small sizes rest on about as many reads; medians are printed), after one round that is not counted (it compiles each size's
//! code once). The sizes take turns, so a change in the machine's speed reaches them alike.
//! `CODEMODE_BENCH_BASELINE=/path/to/an/older/codemode` also starts that build and takes every
//! sample from both servers in turn (alternating which goes first), printing a table for each.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "load/mod.rs"]
mod load;

use common::KeepAlive;
use serde_json::json;
use std::time::{Duration, Instant};

/// Calls one execution may make (the runtime's default `max_calls`).
const MAX_CALLS: usize = 10_000;
/// Trivial runs per chunk of the trivial run's CPU measurement.
const TRIVIAL_CHUNK: usize = 50;
/// Chunks of trivial runs per server.
const TRIVIAL_CHUNKS: usize = 5;
/// The most times the samples a small size takes: a size takes this many times the samples, or
/// as many times as it has fewer reads than 10,000 if that is less, so that its figures
/// (differences of a few hundred microseconds for the smallest) rest on about as many reads as
/// the largest size's.
const MAX_FACTOR: usize = 10;
/// Server CPU under which 10 ms count as idle.
const IDLE_NS: u64 = 100_000;

/// How many times the samples of one size an execution of `reads` reads takes.
fn factor_for(reads: usize) -> usize {
    (MAX_CALLS / reads.max(1)).clamp(1, MAX_FACTOR)
}

/// Whether a size of `reads` reads takes a sample in round `round` (of `repeat` times
/// `MAX_FACTOR`): a size with a smaller factor takes its samples spread over the rounds.
fn sampled_in(reads: usize, round: usize, repeat: usize) -> bool {
    let every = MAX_FACTOR / factor_for(reads);
    round.is_multiple_of(every) && round / every < repeat * factor_for(reads)
}

/// The reads an execution of size `n` makes before its write.
fn reads_for(n: usize) -> usize {
    n.min(MAX_CALLS - 1)
}

/// The code of an execution with `reads` reads and then one write that pauses.
fn code_for(reads: usize) -> String {
    format!(
        "for (let i = 0; i < {reads}; i++) await tasks.list_tasks({{}}); \
         return await tasks.create_task({{ title: 'bench' }})"
    )
}

/// The server's CPU time once it has been idle for 10 ms (or after a second at most), in
/// nanoseconds.
fn settled_cpu_ns(pid: u32) -> u64 {
    let until = Instant::now() + Duration::from_secs(1);
    let mut last = load::cpu_ns(pid);
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let now = load::cpu_ns(pid);
        if now.saturating_sub(last) < IDLE_NS || Instant::now() > until {
            return now;
        }
        last = now;
    }
}

/// One sample of one size: CPU and wall time of the first pass and of the approval.
#[derive(Clone, Copy, Default)]
struct Sample {
    first_cpu: Duration,
    first_wall: Duration,
    replay_cpu: Duration,
    replay_wall: Duration,
}

/// One server under measurement and its client.
struct Subject {
    label: &'static str,
    server: common::Server,
    client: KeepAlive,
}

impl Subject {
    fn start(label: &'static str, bin: &str, dir: &std::path::Path) -> Subject {
        std::fs::create_dir_all(dir).unwrap();
        let store = format!("sqlite:{}", dir.join("codemode.db").display());
        let server = common::serve_bin_on(bin, dir, &store, &["--listen", "127.0.0.1:0"], &[]);
        let client = KeepAlive::open(&server.base);
        Subject {
            label,
            server,
            client,
        }
    }

    fn pid(&self) -> u32 {
        self.server.child.id()
    }

    /// One execution of `reads` reads and a write: paused, approved, rolled back, deleted.
    fn sample(&mut self, reads: usize) -> Sample {
        let code = code_for(reads);
        let pid = self.pid();
        let before = settled_cpu_ns(pid);
        let t = Instant::now();
        let paused = self.client.run(&code);
        let first_wall = t.elapsed();
        let mid = settled_cpu_ns(pid);
        assert_eq!(paused["status"], "paused", "{paused}");
        assert_eq!(paused["pending"][0]["seq"], reads, "{paused}");
        let id = paused["executionId"].as_str().unwrap().to_string();
        let t = Instant::now();
        let done = self
            .client
            .post(&format!("/api/executions/{id}/approve"), &json!({}));
        let replay_wall = t.elapsed();
        let after = settled_cpu_ns(pid);
        assert_eq!(done["status"], "completed", "{done}");
        let undone = self
            .client
            .post(&format!("/api/executions/{id}/rollback"), &json!({}));
        assert_eq!(undone["status"], "rolled_back", "{undone}");
        let deleted = self.client.delete(&format!("/api/executions/{id}"));
        assert_eq!(deleted["deleted"], id.as_str(), "{deleted}");
        Sample {
            first_cpu: Duration::from_nanos(mid.saturating_sub(before)),
            first_wall,
            replay_cpu: Duration::from_nanos(after.saturating_sub(mid)),
            replay_wall,
        }
    }

    /// The server CPU of one chunk of trivial runs, per run.
    fn trivial_chunk(&mut self) -> Duration {
        let pid = self.pid();
        let before = settled_cpu_ns(pid);
        for _ in 0..TRIVIAL_CHUNK {
            let out = self.client.run("async () => 1");
            assert_eq!(out["status"], "completed", "{out}");
        }
        let spent = settled_cpu_ns(pid).saturating_sub(before);
        Duration::from_nanos(spent / TRIVIAL_CHUNK as u64)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The sizes from `CODEMODE_BENCH_SCALE_N`, or the default ones.
fn sizes() -> Vec<usize> {
    let default = vec![1, 100, 1_000, 10_000];
    let Ok(list) = std::env::var("CODEMODE_BENCH_SCALE_N") else {
        return default;
    };
    let parsed: Vec<usize> = list
        .split(',')
        .filter_map(|n| n.trim().replace('_', "").parse().ok())
        .filter(|&n| n > 0)
        .collect();
    if parsed.is_empty() {
        eprintln!("CODEMODE_BENCH_SCALE_N={list:?} holds no size above 0 (write e.g. \"1,100,1000\"); using the default");
        return default;
    }
    parsed
}

/// Microseconds with one decimal.
fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Milliseconds with one decimal.
fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// The medians of one subject's samples of one size.
struct Row {
    samples: usize,
    first_cpu: Duration,
    first_wall: Duration,
    replay_cpu: Duration,
    replay_wall: Duration,
}

impl Row {
    fn of(samples: &[Sample]) -> Row {
        let pick = |f: fn(&Sample) -> Duration| median(samples.iter().map(f).collect());
        Row {
            samples: samples.len(),
            first_cpu: pick(|s| s.first_cpu),
            first_wall: pick(|s| s.first_wall),
            replay_cpu: pick(|s| s.replay_cpu),
            replay_wall: pick(|s| s.replay_wall),
        }
    }
}

/// Prints one subject's table.
fn print_table(label: &str, trivial: Duration, zero: &Row, rows: &[(usize, Row)]) {
    println!(
        "{label}: trivial run {} µs of CPU; the write alone (no reads): first pass {} µs, approval {} µs of CPU",
        us(trivial),
        us(zero.first_cpu),
        us(zero.replay_cpu)
    );
    println!(
        "  {:>6} {:>6} {:>7} | {:>14} {:>14} {:>7} | {:>14} {:>15} | {:>11} {:>10} | {:>12} {:>12}",
        "N",
        "reads",
        "samples",
        "first µs/call",
        "replay µs/call",
        "ratio",
        "marginal first",
        "marginal replay",
        "first CPU ms",
        "replay CPU",
        "first wall ms",
        "replay wall"
    );
    for (n, row) in rows {
        let reads = reads_for(*n) as u32;
        let per_call = |cpu: Duration| cpu.saturating_sub(trivial) / reads;
        let marginal = |cpu: Duration, base: Duration| cpu.saturating_sub(base) / reads;
        let first = per_call(row.first_cpu);
        let replay = per_call(row.replay_cpu);
        let ratio = replay.as_secs_f64() / first.as_secs_f64().max(1e-12);
        println!(
            "  {:>6} {:>6} {:>7} | {:>14} {:>14} {:>7.2} | {:>14} {:>15} | {:>11} {:>10} | {:>12} {:>12}",
            n,
            reads,
            row.samples,
            us(first),
            us(replay),
            ratio,
            us(marginal(row.first_cpu, zero.first_cpu)),
            us(marginal(row.replay_cpu, zero.replay_cpu)),
            ms(row.first_cpu),
            ms(row.replay_cpu),
            ms(row.first_wall),
            ms(row.replay_wall)
        );
    }
}

/// The machine's load averages, from `/proc/loadavg` (empty if it cannot be read).
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let sizes = sizes();
    let load_before = load_average();
    let repeat: usize = load::env_number("CODEMODE_BENCH_SCALE_REPEAT", 3).max(1);
    let dir = tempfile::tempdir().unwrap();
    let mut subjects = vec![Subject::start(
        "this",
        common::BIN,
        &dir.path().join("this"),
    )];
    if let Ok(baseline) = std::env::var("CODEMODE_BENCH_BASELINE") {
        subjects.push(Subject::start(
            "baseline",
            &baseline,
            &dir.path().join("baseline"),
        ));
    }
    let n = subjects.len();
    // Size 0 (the write alone) is measured beside the others: the marginal columns' base.
    let mut all_reads = vec![0];
    all_reads.extend(sizes.iter().map(|&s| reads_for(s)));

    // One round not counted: each size's code is compiled once, the store and the sandbox
    // processes are warm.
    for subject in subjects.iter_mut() {
        for &reads in &all_reads {
            subject.sample(reads);
        }
    }

    let mut trivial = vec![Vec::new(); n];
    for chunk in 0..TRIVIAL_CHUNKS {
        for k in 0..n {
            let i = (chunk + k) % n;
            trivial[i].push(subjects[i].trivial_chunk());
        }
    }

    // samples[subject][size] in the order of `all_reads`.
    let mut samples = vec![vec![Vec::new(); all_reads.len()]; n];
    for round in 0..repeat * MAX_FACTOR {
        for (s, &reads) in all_reads.iter().enumerate() {
            if !sampled_in(reads, round, repeat) {
                continue;
            }
            for k in 0..n {
                let i = (round + k) % n;
                samples[i][s].push(subjects[i].sample(reads));
            }
        }
    }

    println!(
        "codemode: one execution of N reads (tasks.list_tasks) then one write that pauses (tasks.create_task), over HTTP (keep-alive, loopback), SQLite, sandbox processes; medians of {repeat} samples per size times 10,000 / reads (1 to {MAX_FACTOR}), sizes taking turns"
    );
    println!(
        "  first pass: POST /api/run until paused, N reads recorded; replay: the approval until completed (the N reads replayed from the log, then the write)"
    );
    println!(
        "  CPU: every thread of the server and its sandbox processes (/proc), until it is idle again; per call = (CPU - a trivial run's CPU, {} runs) / reads; ratio = replay / first",
        TRIVIAL_CHUNK * TRIVIAL_CHUNKS
    );
    println!("  marginal = (CPU - the same request with no reads) / reads: one more read's cost");
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "  machine: {cores} cores, load average {load_before} before, {} after",
        load_average()
    );
    if sizes.iter().any(|&s| reads_for(s) != s) {
        println!(
            "  an N of {MAX_CALLS} or more makes {} reads: the runtime's max_calls ({MAX_CALLS} calls per execution, the write included) is not set by the config file",
            MAX_CALLS - 1
        );
    }
    for (i, subject) in subjects.iter().enumerate() {
        let zero = Row::of(&samples[i][0]);
        let rows: Vec<(usize, Row)> = sizes
            .iter()
            .zip(&samples[i][1..])
            .map(|(&size, s)| (size, Row::of(s)))
            .collect();
        print_table(subject.label, median(trivial[i].clone()), &zero, &rows);
    }
}
