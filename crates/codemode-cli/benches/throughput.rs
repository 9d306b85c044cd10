//! Throughput at saturation through HTTP on loopback, against `codemode serve` on SQLite.
//! Run: cargo bench -p codemode-cli --bench throughput
//!
//! N keep-alive clients (one connection each, all on one client thread) send requests back to
//! back for a fixed time: trivial code, one read, and pause + approve pairs (an approval-gated
//! write of the same task each time, so the tables do not grow). Printed per case: operations
//! per second, p50 and p99 latency (a pair is one operation of two requests), errors (any
//! answer that is not the expected outcome, refusals included), and the server's resident
//! memory before and after.
//!
//! Environment: `CODEMODE_BENCH_SECONDS` (default 10) per case, `CODEMODE_BENCH_CLIENTS`
//! (default `1,8,64,256`), `CODEMODE_BENCH_BASELINE=/path/to/an/older/codemode` to measure
//! that build too, each case run on both servers one after the other.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "load/mod.rs"]
mod load;

use load::{env_number, rss_kib, Conn};
use std::time::{Duration, Instant};

/// What one client does per operation.
#[derive(Clone, Copy)]
enum Work {
    Trivial,
    Read,
    /// Pause on `complete_task` of this task, then approve.
    Pair(i64),
}

impl Work {
    fn name(self) -> &'static str {
        match self {
            Work::Trivial => "async () => 1",
            Work::Read => "one tasks.list_tasks({})",
            Work::Pair(_) => "complete_task paused + approved",
        }
    }
}

/// One operation on `conn`: `Ok` when every answer was the expected outcome.
async fn operate(conn: &mut Conn, work: Work) -> std::io::Result<Result<(), String>> {
    let expect = |a: &load::Answer, status: &str| -> Result<(), String> {
        if a.status == 200 && a.json["status"] == status {
            Ok(())
        } else {
            Err(format!("{} {}", a.status, a.json))
        }
    };
    Ok(match work {
        Work::Trivial => expect(&conn.run("async () => 1").await?, "completed"),
        Work::Read => expect(
            &conn.run("return await tasks.list_tasks({})").await?,
            "completed",
        ),
        Work::Pair(id) => {
            let code = format!("return await tasks.complete_task({{ id: {id} }})");
            let paused = conn.run(&code).await?;
            if let Err(e) = expect(&paused, "paused") {
                return Ok(Err(e));
            }
            let execution = paused.json["executionId"].as_str().unwrap_or_default();
            let approved = conn
                .post(&format!("/api/executions/{execution}/approve"), "{}")
                .await?;
            expect(&approved, "completed")
        }
    })
}

/// What the clients of one case measured.
#[derive(Default)]
struct Tally {
    micros: Vec<u32>,
    errors: u64,
    first_error: Option<String>,
}

async fn client(base: String, work: Work, until: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut conn = None;
    while Instant::now() < until {
        if conn.is_none() {
            match Conn::open(&base).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    tally.errors += 1;
                    tally.first_error.get_or_insert(e.to_string());
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let t = Instant::now();
        match operate(c, work).await {
            Ok(Ok(())) => tally
                .micros
                .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32),
            Ok(Err(e)) => {
                tally.errors += 1;
                tally.first_error.get_or_insert(e);
            }
            Err(e) => {
                tally.errors += 1;
                tally.first_error.get_or_insert(e.to_string());
                conn = None;
            }
        }
    }
    tally
}

/// One server under measurement.
struct Subject {
    label: String,
    server: common::Server,
    /// The task the pairs complete.
    task: i64,
}

impl Subject {
    fn start(label: &str, bin: &str, dir: &std::path::Path) -> Subject {
        let store = format!("sqlite:{}", dir.join("codemode.db").display());
        let server = common::serve_bin_on(bin, dir, &store, &["--listen", "127.0.0.1:0"], &[]);
        let mut c = common::KeepAlive::open(&server.base);
        let paused = c.run("return await tasks.create_task({ title: 'throughput' })");
        let id = paused["executionId"].as_str().expect("paused").to_string();
        let done = c.post(
            &format!("/api/executions/{id}/approve"),
            &serde_json::json!({}),
        );
        let task = done["result"]["id"].as_i64().expect("a task id");
        Subject {
            label: label.to_string(),
            server,
            task,
        }
    }

    fn rss(&self) -> u64 {
        rss_kib(self.server.child.id())
    }

    /// Runs `clients` clients doing `work` for `seconds`; prints one line.
    fn measure(&self, rt: &tokio::runtime::Runtime, work: Work, clients: usize, seconds: f64) {
        let work = match work {
            Work::Pair(_) => Work::Pair(self.task),
            w => w,
        };
        let before = self.rss();
        let started = Instant::now();
        let until = started + Duration::from_secs_f64(seconds);
        let tallies: Vec<Tally> = rt.block_on(async {
            let tasks: Vec<_> = (0..clients)
                .map(|_| tokio::spawn(client(self.server.base.clone(), work, until)))
                .collect();
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap_or_default());
            }
            out
        });
        let elapsed = started.elapsed().as_secs_f64();
        let after = self.rss();
        let mut micros: Vec<u32> = tallies.iter().flat_map(|t| t.micros.clone()).collect();
        micros.sort_unstable();
        let errors: u64 = tallies.iter().map(|t| t.errors).sum();
        let pct = |p: f64| -> f64 {
            micros
                .get(((micros.len() as f64 * p) as usize).min(micros.len().saturating_sub(1)))
                .map_or(0.0, |&m| m as f64 / 1000.0)
        };
        println!(
            "  {:<11} {:<32} {:>4} {:>9.0} {:>9.2} {:>9.2} {:>7} {:>7.1} {:>7.1}",
            self.label,
            work.name(),
            clients,
            micros.len() as f64 / elapsed,
            pct(0.5),
            pct(0.99),
            errors,
            before as f64 / 1024.0,
            after as f64 / 1024.0,
        );
        if let Some(e) = tallies.iter().find_map(|t| t.first_error.clone()) {
            println!(
                "    first error: {}",
                e.chars().take(300).collect::<String>()
            );
        }
    }
}

fn main() {
    let seconds: f64 = env_number("CODEMODE_BENCH_SECONDS", 10.0);
    let clients: Vec<usize> = std::env::var("CODEMODE_BENCH_CLIENTS")
        .unwrap_or_else(|_| "1,8,64,256".to_string())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("this");
    std::fs::create_dir_all(&mine).unwrap();
    let mut subjects = vec![Subject::start("this build", common::BIN, &mine)];
    if let Ok(baseline) = std::env::var("CODEMODE_BENCH_BASELINE") {
        let theirs = dir.path().join("baseline");
        std::fs::create_dir_all(&theirs).unwrap();
        subjects.push(Subject::start("baseline", &baseline, &theirs));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("codemode over HTTP at saturation (keep-alive clients on one thread, loopback), {seconds} s per case:");
    println!(
        "  {:<11} {:<32} {:>4} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7}",
        "server", "case", "N", "ops/s", "p50 ms", "p99 ms", "errors", "RSS MiB", "after"
    );
    for work in [Work::Trivial, Work::Read, Work::Pair(0)] {
        for &n in &clients {
            for s in &subjects {
                s.measure(&rt, work, n, seconds);
            }
        }
    }
}
