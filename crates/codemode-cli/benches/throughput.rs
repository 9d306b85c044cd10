//! Throughput at saturation through HTTP on loopback, against `codemode serve` on SQLite and
//! on PostgreSQL with two nodes.
//! Run: cargo bench -p codemode-cli --bench throughput
//!
//! N keep-alive clients (all on one client thread) send requests back to back for a fixed
//! time: trivial code, one read, and pause + approve pairs (an approval-gated write of the same
//! task each time, so the tables do not grow). Printed per case: operations per second, p50
//! and p99 latency (a pair is one operation of two requests), errors (any answer that is not
//! the expected outcome, refusals included), and the server's resident memory before and after.
//!
//! On SQLite each client has one connection to the one server. `pg 2 nodes` is two
//! `codemode serve` processes on one scratch PostgreSQL database (created for the run, dropped
//! at the end): client i runs its code on node i % 2 and sends its approvals to the other node,
//! over a second connection; its memory is the sum of both processes.
//!
//! Environment: `CODEMODE_BENCH_SECONDS` (default 10) per case, `CODEMODE_BENCH_CLIENTS`
//! (default `1,8,64,256`), `CODEMODE_BENCH_BASELINE=/path/to/an/older/codemode` to measure
//! that build too on SQLite, `CODEMODE_BENCH_POSTGRES` the PostgreSQL server to make the
//! scratch database on (default `postgres://postgres@127.0.0.1:5432/postgres`; `off` skips
//! it, and so does an unreachable server, with one line saying why). Each case runs on every
//! server one after the other.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "load/mod.rs"]
mod load;

use codemode_postgres::ScratchDatabase;
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

/// One client's connections: to the node that runs its code, and to the node that approves
/// when that is another one.
struct Conns {
    run: Conn,
    other: Option<Conn>,
}

impl Conns {
    /// Connects to `run`, and to `approve` too when it is another node.
    async fn open(run: &str, approve: &str) -> std::io::Result<Conns> {
        let other = if approve == run {
            None
        } else {
            Some(Conn::open(approve).await?)
        };
        Ok(Conns {
            run: Conn::open(run).await?,
            other,
        })
    }

    /// The connection approvals go on.
    fn approver(&mut self) -> &mut Conn {
        self.other.as_mut().unwrap_or(&mut self.run)
    }
}

/// One operation on `conns`: `Ok` when every answer was the expected outcome.
async fn operate(conns: &mut Conns, work: Work) -> std::io::Result<Result<(), String>> {
    let conn = &mut conns.run;
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
            let approved = conns
                .approver()
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

/// One client doing `work` until `until`: runs on node `run`, approves on node `approve`.
async fn client(run: String, approve: String, work: Work, until: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut conn = None;
    while Instant::now() < until {
        if conn.is_none() {
            match Conns::open(&run, &approve).await {
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

/// One store under measurement, served by one node or several.
struct Subject {
    label: String,
    /// The `codemode serve` processes; client i runs its code on node i % len and approves
    /// on the next one.
    nodes: Vec<common::Server>,
    /// The task the pairs complete.
    task: i64,
    /// The PostgreSQL database the nodes share, dropped after them (fields drop in order).
    _database: Option<ScratchDatabase>,
}

impl Subject {
    /// `bin serve` on a SQLite file in `dir`.
    fn start(label: &str, bin: &str, dir: &std::path::Path) -> Subject {
        let store = format!("sqlite:{}", dir.join("codemode.db").display());
        let server = common::serve_bin_on(bin, dir, &store, &["--listen", "127.0.0.1:0"], &[]);
        Subject::with_nodes(label, vec![server], None)
    }

    /// Two nodes of this build on a scratch database of the PostgreSQL server `admin_url`.
    /// Nodes need no setting to share a store: each takes a random node id for its leases,
    /// and the lease length (`[limits] lease_ms`) is the same default on both.
    fn start_postgres(
        rt: &tokio::runtime::Runtime,
        admin_url: &str,
        dir: &std::path::Path,
    ) -> Result<Subject, String> {
        let database = rt
            .block_on(ScratchDatabase::create(admin_url))
            .map_err(|e| e.to_string())?;
        let nodes = (0..2)
            .map(|_| common::serve_on(dir, database.url(), &["--listen", "127.0.0.1:0"], &[]))
            .collect();
        Ok(Subject::with_nodes("pg 2 nodes", nodes, Some(database)))
    }

    /// Creates the task the pairs complete: paused on the first node, approved on the last
    /// (on PostgreSQL this checks once that another node's approval resumes the execution).
    fn with_nodes(
        label: &str,
        nodes: Vec<common::Server>,
        database: Option<ScratchDatabase>,
    ) -> Subject {
        let first = &nodes[0].base;
        let last = &nodes[nodes.len() - 1].base;
        let paused = common::KeepAlive::open(first)
            .run("return await tasks.create_task({ title: 'throughput' })");
        let id = paused["executionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{label}: create_task did not pause: {paused}"))
            .to_string();
        let done = common::KeepAlive::open(last).post(
            &format!("/api/executions/{id}/approve"),
            &serde_json::json!({}),
        );
        let task = done["result"]["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{label}: approving {id} on {last} gave no task: {done}"));
        Subject {
            label: label.to_string(),
            nodes,
            task,
            _database: database,
        }
    }

    /// The resident memory of all the nodes together, in KiB.
    fn rss(&self) -> u64 {
        self.nodes.iter().map(|n| rss_kib(n.child.id())).sum()
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
                .map(|i| {
                    let run = self.nodes[i % self.nodes.len()].base.clone();
                    let approve = self.nodes[(i + 1) % self.nodes.len()].base.clone();
                    tokio::spawn(client(run, approve, work, until))
                })
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
    let postgres = std::env::var("CODEMODE_BENCH_POSTGRES")
        .unwrap_or_else(|_| codemode_postgres::DEFAULT_TEST_URL.to_string());
    if postgres != "off" {
        let nodes = dir.path().join("postgres");
        std::fs::create_dir_all(&nodes).unwrap();
        match Subject::start_postgres(&rt, &postgres, &nodes) {
            Ok(s) => subjects.push(s),
            Err(e) => println!(
                "pg 2 nodes skipped (CODEMODE_BENCH_POSTGRES names another server, or off): {e}"
            ),
        }
    }
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
