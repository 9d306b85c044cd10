//! The two-node load test: two `pg-node listen` processes on one PostgreSQL database, driven
//! from this process over loopback.
//!
//! Each execution makes two durable writes, then pauses at an approval-gated action; it is
//! started on one node and approved on the *other*. Every real run of the action is appended
//! to a shared file under its idempotency key, so at the end an action approved but never
//! applied (lost) or applied twice (doubled) is counted. Prints a report, then one line
//! `result {json}`; exits 1 if anything was lost, doubled, or failed.
//!
//! Usage: `pg-load [--url DATABASE_URL] [--executions N] [--concurrency C] [--node PG_NODE]`
//! - `--url`: the database both nodes use. Without it a scratch database is created on
//!   `CODEMODE_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`)
//!   and dropped at the end.
//! - `--executions` (default 2000) and `--concurrency` (default 32): executions in flight.
//! - `--node`: the `pg-node` binary (default: beside this one).

use codemode_postgres::{ScratchDatabase, DEFAULT_TEST_URL};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// Two durable writes (`reserve`), then the approval-gated `ship` at seq 2.
const CODE: &str = "async () => { const a = await shop.reserve({ item: 1 }); \
                    const b = await shop.reserve({ item: 2 }); \
                    const s = await shop.ship({ items: [a.key, b.key] }); return s.shipped; }";
const SHIP_SEQ: u64 = 2;
const NODE_NAMES: [&str; 2] = ["A", "B"];

struct Options {
    url: Option<String>,
    executions: usize,
    concurrency: usize,
    node: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        url: None,
        executions: 2000,
        concurrency: 32,
        node: std::env::current_exe()
            .map_err(|e| e.to_string())?
            .with_file_name("pg-node"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => options.url = Some(value),
            "--executions" => options.executions = value.parse().map_err(|e| format!("{e}"))?,
            "--concurrency" => options.concurrency = value.parse().map_err(|e| format!("{e}"))?,
            "--node" => options.node = value.into(),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    options.concurrency = options.concurrency.clamp(1, options.executions.max(1));
    Ok(options)
}

/// A node process, killed on drop.
struct Node {
    child: Child,
    addr: String,
}

impl Node {
    fn start(bin: &PathBuf, url: &str, effects: &std::path::Path, name: &str) -> Node {
        let mut child = Command::new(bin)
            .args([
                url,
                "shop",
                "listen",
                effects.to_str().expect("utf-8 path"),
                name,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the node's first line");
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("node {name} did not start: {line:?}"))
            .to_string();
        Node { child, addr }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One connection to a node: a request, then its one-line answer.
struct Conn {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl Conn {
    async fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).await.expect("connect to a node");
        stream.set_nodelay(true).expect("nodelay");
        let (read, write) = stream.into_split();
        Conn {
            lines: BufReader::new(read).lines(),
            write,
        }
    }

    async fn request(&mut self, line: &str) -> Value {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("send to a node");
        let answer = self
            .lines
            .next_line()
            .await
            .expect("read from a node")
            .expect("the node closed the connection");
        serde_json::from_str(&answer).expect("a JSON answer")
    }
}

/// What one execution went through, as seen by the driver.
struct Record {
    id: String,
    /// The node that ran it; the approval went to the other one.
    started_on: usize,
    run: Duration,
    approve: Option<Duration>,
    /// What went wrong, if anything did.
    failure: Option<String>,
}

async fn worker(addrs: Arc<[String; 2]>, next: Arc<AtomicUsize>, total: usize) -> Vec<Record> {
    let mut conns = [Conn::open(&addrs[0]).await, Conn::open(&addrs[1]).await];
    let mut records = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= total {
            return records;
        }
        let node = i % 2;
        let started = Instant::now();
        let outcome = conns[node].request(&format!("run {CODE}")).await;
        let run = started.elapsed();
        let id = outcome["executionId"].as_str().unwrap_or("").to_string();
        if outcome["status"] != "paused" {
            records.push(Record {
                id,
                started_on: node,
                run,
                approve: None,
                failure: Some(format!("run: {outcome}")),
            });
            continue;
        }
        let started = Instant::now();
        let outcome = conns[1 - node].request(&format!("approve {id}")).await;
        let approve = started.elapsed();
        let expected = json!(format!("{id}:{SHIP_SEQ}"));
        let failure = (outcome["status"] != "completed" || outcome["result"] != expected)
            .then(|| format!("approve: {outcome}"));
        records.push(Record {
            id,
            started_on: node,
            run,
            approve: Some(approve),
            failure,
        });
    }
}

/// Nearest-rank percentile of sorted durations, in milliseconds.
fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pg-load: {e}");
            std::process::exit(2);
        }
    };
    let mut scratch = None;
    let url = match &options.url {
        Some(url) => url.clone(),
        None => {
            let admin = std::env::var("CODEMODE_TEST_POSTGRES_URL")
                .unwrap_or_else(|_| DEFAULT_TEST_URL.to_string());
            let db = ScratchDatabase::create(&admin).await.unwrap_or_else(|e| {
                eprintln!("pg-load: {e}");
                std::process::exit(2);
            });
            let url = db.url().to_string();
            scratch = Some(db);
            url
        }
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let effects = dir.path().join("effects.txt");
    let nodes: Vec<Node> = NODE_NAMES
        .iter()
        .map(|name| Node::start(&options.node, &url, &effects, name))
        .collect();
    let addrs = Arc::new([nodes[0].addr.clone(), nodes[1].addr.clone()]);

    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..options.concurrency)
        .map(|_| tokio::spawn(worker(addrs.clone(), next.clone(), options.executions)))
        .collect();
    let mut records = Vec::with_capacity(options.executions);
    for w in workers {
        records.extend(w.await.expect("a worker"));
    }
    let elapsed = started.elapsed();
    drop(nodes);

    // Every real run of `ship`, by idempotency key, with the node that ran it.
    let mut applied: HashMap<String, Vec<String>> = HashMap::new();
    for line in std::fs::read_to_string(&effects)
        .unwrap_or_default()
        .lines()
    {
        let mut parts = line.split(' ');
        if let (Some("effect"), Some(key), Some(node)) = (parts.next(), parts.next(), parts.next())
        {
            applied
                .entry(key.to_string())
                .or_default()
                .push(node.to_string());
        }
    }
    let mut lost = 0;
    let mut doubled = 0;
    let mut failures = Vec::new();
    let mut on_other_node = 0;
    for r in &records {
        if let Some(f) = &r.failure {
            failures.push(format!("{}: {f}", r.id));
        }
        let key = format!("{}:{SHIP_SEQ}", r.id);
        let runs = applied.remove(&key).unwrap_or_default();
        if r.approve.is_some() && runs.is_empty() {
            lost += 1;
        }
        if runs.len() > 1 {
            doubled += 1;
        }
        if runs.len() == 1 && runs[0] == NODE_NAMES[1 - r.started_on] {
            on_other_node += 1;
        }
    }
    // Effects of executions the driver never saw approved would be doubled runs too.
    let stray = applied.len();

    let mut runs: Vec<Duration> = records.iter().map(|r| r.run).collect();
    let mut approves: Vec<Duration> = records.iter().filter_map(|r| r.approve).collect();
    runs.sort();
    approves.sort();
    let per_second = records.len() as f64 / elapsed.as_secs_f64();
    let result = json!({
        "executions": records.len(),
        "concurrency": options.concurrency,
        "seconds": elapsed.as_secs_f64(),
        "executions_per_second": per_second,
        "run_p50_ms": percentile(&runs, 50.0),
        "run_p99_ms": percentile(&runs, 99.0),
        "approve_p50_ms": percentile(&approves, 50.0),
        "approve_p99_ms": percentile(&approves, 99.0),
        "approved": approves.len(),
        "applied_on_the_approving_node": on_other_node,
        "lost": lost,
        "doubled": doubled,
        "stray": stray,
        "failures": failures.len(),
    });
    println!(
        "{} executions over two nodes, {} in flight, in {:.2} s: {:.1} executions/s",
        records.len(),
        options.concurrency,
        elapsed.as_secs_f64(),
        per_second
    );
    println!(
        "run (to the pause):     p50 {:.2} ms, p99 {:.2} ms",
        percentile(&runs, 50.0),
        percentile(&runs, 99.0)
    );
    println!(
        "approve (on the other): p50 {:.2} ms, p99 {:.2} ms",
        percentile(&approves, 50.0),
        percentile(&approves, 99.0)
    );
    println!(
        "approved {}, applied on the approving node {on_other_node}, lost {lost}, doubled {doubled}, stray {stray}, failures {}",
        approves.len(),
        failures.len()
    );
    for f in failures.iter().take(10) {
        println!("failure: {f}");
    }
    println!("result {result}");
    drop(dir);
    drop(scratch);
    if lost + doubled + stray + failures.len() > 0 {
        std::process::exit(1);
    }
}
