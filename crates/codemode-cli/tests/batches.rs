//! Bounded batches over MCP, as a model's client sees them: 300 approval calls in one
//! `Promise.all`, run through `codemode serve` by the official TypeScript SDK client, are
//! proposed 25 at a time (12 batches), each answer within the 6,000-token result budget, and
//! every write runs exactly once. Skipped (with a message) when node or the fixtures are not
//! installed.

mod common;

use common::serve;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The default result budget: 6,000 tokens of four characters.
const BUDGET_CHARS: usize = 6_000 * 4;

const CODE: &str = "const made = await Promise.all(Array.from({ length: 300 }, (_, i) => tasks.create_task({ title: `Follow up with customer ${i} about the renewal quote sent last week` }))); return made.length;";

#[test]
fn three_hundred_approvals_come_in_twelve_batches_within_the_budget() {
    let Some(fx) = common::fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = "[approvals]\nelicitation = false\nwait_ms = 0\n";
    std::fs::write(dir.path().join("codemode.toml"), config).unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_batches.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg(&fx)
        .arg(format!("{}/mcp", server.base))
        .arg(&server.base)
        .arg("--")
        .arg(CODE)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answers = v["answers"].as_array().unwrap();
    for (i, a) in answers.iter().enumerate() {
        eprintln!(
            "answer {:>2}: {:>9} {:>3} pending, {:>6} characters in all ({} text, {} structured)",
            i + 1,
            a["status"].as_str().unwrap_or("?"),
            a["pending"].as_array().map_or(0, Vec::len),
            a["chars"],
            a["text_chars"],
            a["structured_chars"]
        );
    }
    let (paused, last) = answers.split_at(answers.len() - 1);
    assert_eq!(paused.len(), 12, "12 batches: {v}");
    assert_eq!(last[0]["status"], "completed", "{}", last[0]);
    assert_eq!(last[0]["result"], 300);
    let mut proposed = Vec::new();
    for (i, a) in paused.iter().enumerate() {
        assert_eq!(a["status"], "paused", "{a}");
        let seqs: Vec<u64> = a["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap())
            .collect();
        // In seq order, 25 at a time, the last batch the rest.
        let want: Vec<u64> = (i as u64 * 25..((i as u64 + 1) * 25).min(300)).collect();
        assert_eq!(seqs, want, "batch {}", i + 1);
        proposed.extend(seqs);
        let chars = a["chars"].as_u64().unwrap() as usize;
        assert!(
            chars <= BUDGET_CHARS,
            "answer {} is {chars} characters",
            i + 1
        );
        assert!(
            a["structured_chars"].as_u64().unwrap() < 60 * 25 + 200,
            "the structured copy carries ids, not the arguments again: {a}"
        );
    }
    assert_eq!(proposed.len(), 300);
    let first = paused[0]["text"].as_str().unwrap();
    assert!(
        first.contains("approve 25 actions")
            && first.contains("seq 0 tasks.create_task({\"title\":\"Follow up with customer 0")
            && first.contains("These are one batch (at most 25 actions"),
        "{first}"
    );
    // Each write ran exactly once.
    let titles: Vec<&str> = v["titles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let distinct: BTreeSet<&str> = titles.iter().copied().collect();
    assert_eq!(titles.len(), 300, "{} tasks", titles.len());
    assert_eq!(distinct.len(), 300);
}
