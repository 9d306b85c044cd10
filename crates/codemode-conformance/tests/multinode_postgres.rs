//! Two node processes on one PostgreSQL database: approvals raced between them resume each
//! execution exactly once; a node killed mid-pass is collected by another without doubling
//! anything applied.

use codemode::{
    CallContext, ExecutionStatus, Outcome, Runtime, RustConnector, RustTool, ToolError,
};
use codemode_conformance::journal::{take_over_and_check, CRASH_CASES};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

const NODE: &str = env!("CARGO_BIN_EXE_pg-node");
const ROUNDS: usize = 1000;

/// The same `bank` connector the nodes configure; here it only ever pauses.
fn bank() -> RustConnector {
    RustConnector::new("bank").tool(
        RustTool::new("transfer", |args: Value, _ctx: CallContext| async move {
            Ok::<Value, ToolError>(json!({ "sent": args["amount"] }))
        })
        .description("Moves money; needs approval.")
        .requires_approval(true),
    )
}

struct Node {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Node {
    fn start(url: &str, runtime: &str) -> Node {
        let mut child = Command::new(NODE)
            .args([url, runtime, "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a node");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut ready = String::new();
        stdout.read_line(&mut ready).unwrap();
        assert_eq!(ready.trim(), "ready");
        Node {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, id: &str) {
        writeln!(self.stdin, "approve {id}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// `(won, runs, message)` of the answer for `id`.
    fn answer(&mut self, id: &str) -> (bool, u64, String) {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let mut parts = line.trim_end().splitn(5, ' ');
        assert_eq!(parts.next(), Some("done"), "{line}");
        assert_eq!(parts.next(), Some(id), "{line}");
        let won = parts.next() == Some("won");
        let runs = parts.next().and_then(|n| n.parse().ok()).expect("runs");
        (won, runs, parts.next().unwrap_or("").to_string())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_approve_at_once_and_the_action_runs_exactly_once() {
    let Some(db) = ScratchDatabase::for_tests("two_nodes_approve_at_once")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(db.url()).await.unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let maker = Runtime::builder(store.clone(), executor)
        .name("bank")
        .connector(bank())
        .max_executions(ROUNDS * 2)
        .build()
        .unwrap();
    let mut ids = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let outcome = maker
            .call("async () => { const r = await bank.transfer({ amount: 5 }); return r.sent; }")
            .await
            .unwrap();
        assert!(matches!(outcome, Outcome::Paused { .. }), "{outcome:?}");
        ids.push(outcome.execution_id().to_string());
    }

    let mut a = Node::start(db.url(), "bank");
    let mut b = Node::start(db.url(), "bank");
    let mut wins = [0usize; 2];
    let started = Instant::now();
    for id in &ids {
        // Both nodes are waiting on their stdin: the two approvals leave together.
        a.send(id);
        b.send(id);
        let (wa, ra, ma) = a.answer(id);
        let (wb, rb, mb) = b.answer(id);
        assert!(
            wa ^ wb,
            "{id}: exactly one node must win: A {wa} {ma}; B {wb} {mb}"
        );
        assert_eq!(
            ra + rb,
            1,
            "{id}: the approved action must run exactly once"
        );
        let loser = if wa { &mb } else { &ma };
        assert!(
            loser.contains("already")
                || loser.contains("is running")
                || loser.contains("completed"),
            "{id}: the loser must be told clearly: {loser}"
        );
        wins[usize::from(wb)] += 1;
    }
    let elapsed = started.elapsed();
    println!(
        "{ROUNDS} raced approvals in {elapsed:?}: node A won {}, node B won {}",
        wins[0], wins[1]
    );
    let done = store
        .executions_with_status_count("bank", ExecutionStatus::Completed)
        .await;
    assert_eq!(done, ROUNDS);
}

/// Counting helper kept here so the test reads as one story.
trait CountByStatus {
    async fn executions_with_status_count(&self, runtime: &str, status: ExecutionStatus) -> usize;
}

impl CountByStatus for PostgresStore {
    async fn executions_with_status_count(&self, runtime: &str, status: ExecutionStatus) -> usize {
        codemode::Store::executions(self, runtime, None, Some(status))
            .await
            .unwrap()
            .len()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_pass_is_collected_by_another() {
    let Some(db) = ScratchDatabase::for_tests("a_node_killed_mid_pass")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(db.url()).await.unwrap());
    for (i, case) in CRASH_CASES.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.txt");
        let runtime_name = format!("crash-{i}");
        let status = Command::new(NODE)
            .args([
                db.url(),
                &runtime_name,
                "crash",
                journal.to_str().unwrap(),
                case.point,
                &case.seq.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            !status.success(),
            "the node must die at {} {}",
            case.point,
            case.seq
        );

        take_over_and_check(store.clone(), &runtime_name, &journal, case).await;
    }
}
