//! Medians through HTTP on loopback with a keep-alive client, against `codemode serve`.
//! Run: cargo bench -p codemode-cli --bench http
//!
//! The client is a plain HTTP/1.1 connection on a blocking socket (keep-alive, no pooling,
//! no async runtime), so the figures are the server's latency plus one loopback round trip.
//! The cases are interleaved, one sample of each per round.
//!
//! Every case is measured quiet and loaded: rounds alternate in blocks between a quiet
//! machine and one where a busy loop runs on every core at normal priority (the first rounds
//! of each block are not counted, so each block measures its steady state). The loaded column
//! is printed beside the quiet one, with their ratio.
//!
//! Last, quiet, it runs trivial code in chunks of 250 runs, then the loop of 100 reads in
//! chunks of 25, taking turns between servers, and prints the CPU time each server spent per
//! run and per call (the loop minus a trivial run, over 100): every thread of the server and of
//! its child processes (the sandbox processes), from `/proc`; a figure a busy machine disturbs
//! less than a latency.
//!
//! `CODEMODE_BENCH_N` sets the samples per case and mode (default 300);
//! `CODEMODE_BENCH_CPU_CHUNKS` the chunks of 250 trivial runs per server (default 8).
//! `CODEMODE_BENCH_BASELINE=/path/to/an/older/codemode` also starts that build and takes every
//! sample from both servers in the same round (alternating which goes first), so the
//! columns share the machine's state at every moment; the last columns are new / baseline.
//! `CODEMODE_BENCH_THREADS=1` also starts this build with `[sandbox] isolation = "thread"`
//! (passes on the server's own threads instead of sandbox processes), measured the same way:
//! its columns are the cost of the process boundary (this / threads).
//! `CODEMODE_BENCH_TELEMETRY=1` also starts this build with OpenTelemetry on, exporting to a
//! local OTLP receiver (in this process, answering every POST at once), measured the same way:
//! its columns are the cost of traces (on / off).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "load/mod.rs"]
mod load;

use common::KeepAlive;
use serde_json::json;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// One measured case: its name and its samples, quiet and loaded.
struct Case {
    name: &'static str,
    quiet: Vec<Duration>,
    loaded: Vec<Duration>,
}

impl Case {
    fn new(name: &'static str) -> Self {
        Case {
            name,
            quiet: Vec::new(),
            loaded: Vec::new(),
        }
    }

    /// The quiet and loaded medians.
    fn medians(&self) -> (Duration, Duration) {
        (median(self.quiet.clone()), median(self.loaded.clone()))
    }
}

/// Runs `code` (which must pause on `create_task`), approves it, then rolls it back so the
/// task list stays empty for the other cases; returns the paused run's and the approval's
/// times.
fn pause_then_approve(c: &mut KeepAlive, code: &str) -> (Duration, Duration) {
    let t = Instant::now();
    let paused = c.run(code);
    let half = t.elapsed();
    let id = paused["executionId"].as_str().unwrap().to_string();
    let done = c.post(&format!("/api/executions/{id}/approve"), &json!({}));
    let whole = t.elapsed();
    assert_eq!(done["status"], "completed", "{done}");
    let undone = c.post(&format!("/api/executions/{id}/rollback"), &json!({}));
    assert_eq!(undone["status"], "rolled_back", "{undone}");
    (half, whole - half)
}

/// One server under measurement, its client and its samples.
struct Subject {
    server: common::Server,
    client: KeepAlive,
    cases: Vec<Case>,
}

const RUNS: [(&str, &str); 3] = [
    ("async () => 1", "async () => 1"),
    (
        "one tasks.list_tasks({})",
        "return await tasks.list_tasks({})",
    ),
    (
        "loop of 100 list_tasks",
        "for (let i = 0; i < 100; i++) await tasks.list_tasks({}); return 1",
    ),
];

impl Subject {
    fn start(bin: &str, dir: &std::path::Path, env: &[(&str, &str)]) -> Subject {
        let store = format!("sqlite:{}", dir.join("codemode.db").display());
        let server = common::serve_bin_on(bin, dir, &store, &["--listen", "127.0.0.1:0"], env);
        let client = KeepAlive::open(&server.base);
        let mut cases = vec![Case::new("GET /healthz (the HTTP floor)")];
        cases.extend(RUNS.iter().map(|(name, _)| Case::new(name)));
        cases.extend([
            Case::new("create_task paused, then approved"),
            Case::new("  of which the paused run"),
            Case::new("  of which the approval"),
            Case::new("  the same with new code each time"),
        ]);
        Subject {
            server,
            client,
            cases,
        }
    }

    /// Takes one sample of every case; `counted` says under which load it is kept, if at all.
    fn round(&mut self, round: usize, counted: Option<Load>) {
        let c = &mut self.client;
        let mut times = Vec::new();
        let t = Instant::now();
        c.get("/healthz");
        times.push(t.elapsed());
        for (_, code) in RUNS.iter() {
            let t = Instant::now();
            let out = c.run(code);
            times.push(t.elapsed());
            assert_eq!(out["status"], "completed", "{out}");
            // Deleted, so that no later run's retention prune pays for the 100 log entries
            // of the loop: every insert then prunes one execution of the approval pairs.
            let id = out["executionId"].as_str().unwrap();
            let deleted = c.delete(&format!("/api/executions/{id}"));
            assert_eq!(deleted["deleted"], id, "{deleted}");
        }
        let same_code = "return await tasks.create_task({ title: 'bench' })";
        let (paused, approved) = pause_then_approve(c, same_code);
        // Code the server has not seen: its first pass parses and compiles it.
        let novel = format!("return await tasks.create_task({{ title: 'bench {round}' }})");
        let (novel_paused, novel_approved) = pause_then_approve(c, &novel);
        times.extend([
            paused + approved,
            paused,
            approved,
            novel_paused + novel_approved,
        ]);
        for (case, time) in self.cases.iter_mut().zip(times) {
            match counted {
                Some(Load::Quiet) => case.quiet.push(time),
                Some(Load::Loaded) => case.loaded.push(time),
                None => {}
            }
        }
    }
}

/// The machine's state during a round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Load {
    /// Nothing else runs.
    Quiet,
    /// A busy loop runs on every core at normal priority.
    Loaded,
}

/// Rounds in a row under one load.
const BLOCK: usize = 25;
/// Rounds at the start of each block that are not counted.
const SETTLE: usize = 5;

/// An OTLP/HTTP receiver on loopback that reads each request and answers 200 at once; its
/// base URL.
fn otlp_sink() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    base
}

/// Trivial runs a server makes in one turn of the CPU measurement.
const CPU_CHUNK: usize = 250;

/// Runs `code` `per_chunk` times a chunk, taking turns between the servers, on a quiet
/// machine; returns each server's CPU time per run.
fn cpu_per_run(
    subjects: &mut [Subject],
    chunks: usize,
    per_chunk: usize,
    code: &str,
) -> Vec<Duration> {
    let n = subjects.len();
    let mut spent = vec![0u64; n];
    for chunk in 0..chunks {
        for k in 0..n {
            let i = (chunk + k) % n;
            let subject = &mut subjects[i];
            let pid = subject.server.child.id();
            let before = load::cpu_ns(pid);
            for _ in 0..per_chunk {
                let out = subject.client.run(code);
                assert_eq!(out["status"], "completed", "{out}");
            }
            spent[i] += load::cpu_ns(pid).saturating_sub(before);
        }
    }
    let runs = (chunks * per_chunk).max(1) as u64;
    spent
        .into_iter()
        .map(|ns| Duration::from_nanos(ns / runs))
        .collect()
}

/// Prints one CPU figure for every server, with each one's ratio to the first.
fn print_cpu(what: &str, labels: &[&str], cpu: &[Duration], show: impl Fn(Duration) -> String) {
    print!("{what}: {} {}", labels[0], show(cpu[0]));
    for (label, theirs) in labels.iter().zip(cpu).skip(1) {
        let ratio = theirs.as_secs_f64() / cpu[0].as_secs_f64().max(1e-12);
        print!(
            ", {label} {} ({label}/{} {ratio:.2})",
            show(*theirs),
            labels[0]
        );
    }
    println!();
}

fn main() {
    let iterations: usize = load::env_number("CODEMODE_BENCH_N", 300);
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("this");
    std::fs::create_dir_all(&mine).unwrap();
    let mut subjects = vec![Subject::start(common::BIN, &mine, &[])];
    let mut labels = vec!["this"];
    if let Ok(baseline) = std::env::var("CODEMODE_BENCH_BASELINE") {
        let theirs = dir.path().join("baseline");
        std::fs::create_dir_all(&theirs).unwrap();
        subjects.push(Subject::start(&baseline, &theirs, &[]));
        labels.push("base");
    }
    if std::env::var_os("CODEMODE_BENCH_THREADS").is_some() {
        // The same build with passes on its own threads: the sandbox processes' cost.
        let threads = dir.path().join("threads");
        std::fs::create_dir_all(&threads).unwrap();
        std::fs::write(
            threads.join("codemode.toml"),
            "[sandbox]\nisolation = \"thread\"\n",
        )
        .unwrap();
        subjects.push(Subject::start(common::BIN, &threads, &[]));
        labels.push("threads");
    }
    if std::env::var_os("CODEMODE_BENCH_TELEMETRY").is_some() {
        let traced = dir.path().join("traced");
        std::fs::create_dir_all(&traced).unwrap();
        let sink = otlp_sink();
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", sink.as_str())];
        subjects.push(Subject::start(common::BIN, &traced, &env));
        labels.push("traced");
    }

    // Every round takes one sample of every case (of every server), so a change in the
    // machine's speed during the run reaches all of them alike. Blocks of rounds alternate
    // between quiet and loaded until both have `iterations` samples per case.
    let per_block = BLOCK - SETTLE;
    let blocks = 2 * iterations.div_ceil(per_block);
    let mut round = 0;
    for block in 0..blocks {
        let load = if block % 2 == 0 {
            Load::Quiet
        } else {
            Load::Loaded
        };
        let _hog = (load == Load::Loaded).then(load::Hog::start);
        for in_block in 0..BLOCK {
            let counted = (in_block >= SETTLE).then_some(load);
            let n = subjects.len();
            for k in 0..n {
                subjects[(round + k) % n].round(round, counted);
            }
            round += 1;
        }
    }

    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    println!(
        "codemode over HTTP (keep-alive, loopback), median of {} per case; loaded: {cores} busy loops at normal priority:",
        blocks / 2 * per_block
    );
    print!(
        "  {:<44} {:>10} {:>10} {:>7}",
        "", "quiet", "loaded", "ratio"
    );
    for label in &labels[1..] {
        print!(
            " {:>12} {:>10} {:>7} {:>12} {:>9}",
            format!("{label} quiet"),
            "loaded",
            "ratio",
            format!("{label}/{}", labels[0]),
            "loaded"
        );
    }
    println!();
    let r = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    for (i, case) in subjects[0].cases.iter().enumerate() {
        let (q, l) = case.medians();
        print!(
            "  {:<44} {:>10} {:>10} {:>7.2}",
            case.name,
            ms(q),
            ms(l),
            r(l, q)
        );
        for other in &subjects[1..] {
            let (oq, ol) = other.cases[i].medians();
            print!(
                " {:>12} {:>10} {:>7.2} {:>12.2} {:>9.2}",
                ms(oq),
                ms(ol),
                r(ol, oq),
                r(oq, q),
                r(ol, l)
            );
        }
        println!();
    }

    let chunks: usize = load::env_number("CODEMODE_BENCH_CPU_CHUNKS", 8);
    if chunks > 0 {
        let trivial = cpu_per_run(&mut subjects, chunks, CPU_CHUNK, "async () => 1");
        let what = format!(
            "server CPU per `async () => 1` (every thread and sandbox process, quiet, {} runs each)",
            chunks * CPU_CHUNK
        );
        print_cpu(&what, &labels, &trivial, ms);
        let (loop_code, calls) = (RUNS[2].1, 100u32);
        let looped = cpu_per_run(&mut subjects, chunks, CPU_CHUNK / 10, loop_code);
        let per_call: Vec<Duration> = looped
            .iter()
            .zip(&trivial)
            .map(|(l, t)| l.saturating_sub(*t) / calls)
            .collect();
        let what = format!(
            "server CPU per call (a loop of {calls} list_tasks minus a trivial run, {} runs each)",
            chunks * CPU_CHUNK / 10
        );
        print_cpu(&what, &labels, &per_call, |d| {
            format!("{:.1} µs", d.as_secs_f64() * 1e6)
        });
    }
}
