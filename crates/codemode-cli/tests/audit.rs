//! The audit export matches the decisions made, in order, on SQLite and on PostgreSQL: over
//! `GET /api/audit`, `codemode --server URL audit` and `codemode audit` on the store itself,
//! also once the runs that recorded them were deleted.
//!
//! PostgreSQL: the server of `CODEMODE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), in a scratch database dropped at the end.

mod common;

use codemode_postgres::ScratchDatabase;
use common::{get, post, serve_on, BIN};
use serde_json::{json, Value};
use std::process::{Command, Stdio};

/// Runs `codemode ARGS` and returns its stdout; panics when it fails.
fn codemode(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run codemode");
    assert!(
        out.status.success(),
        "codemode {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Starts a run that pauses on `tasks.create_task({title})`; its execution id.
async fn paused(c: &reqwest::Client, base: &str, title: &str) -> String {
    let code = format!("const t = await tasks.create_task({{ title: {title:?} }}); return t.id;");
    let (_, outcome) = post(c, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(outcome["status"], "paused", "{outcome}");
    outcome["executionId"].as_str().unwrap().to_string()
}

/// `(event, executionId, seqs, by)` of each record, in order.
fn digest(records: &[Value]) -> Vec<(String, String, Vec<u64>, String)> {
    records
        .iter()
        .map(|r| {
            let seqs = r["calls"].as_array().unwrap().iter();
            (
                r["event"].as_str().unwrap().to_string(),
                r["executionId"].as_str().unwrap().to_string(),
                seqs.map(|c| c["seq"].as_u64().unwrap()).collect(),
                r["by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Approves one run, rejects another, approves and rolls back a third, then checks every
/// export against those decisions as the executions record them.
async fn audit_matches_the_decisions(store: &str, local: bool) {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_on(dir.path(), store, &["--listen", "127.0.0.1:0"], &[]);
    let base = server.base.as_str();
    let c = common::client();
    let since = codemode::now_ms();

    let a = paused(&c, base, "approved").await;
    let (status, body) = post(&c, format!("{base}/api/executions/{a}/approve"), json!({})).await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("completed")),
        "{body}"
    );
    let b = paused(&c, base, "rejected").await;
    let (status, body) = post(
        &c,
        format!("{base}/api/executions/{b}/reject"),
        json!({"seq": 0}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let r = paused(&c, base, "rolled back").await;
    let (status, body) = post(&c, format!("{base}/api/executions/{r}/approve"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(&c, format!("{base}/api/executions/{r}/rollback"), json!({})).await;
    assert_eq!((status, &body["reverted"]), (200, &json!([0])), "{body}");

    let (status, all) = get(&c, format!("{base}/api/audit?since={since}")).await;
    assert_eq!(status, 200, "{all}");
    let all = all.as_array().unwrap().clone();
    let s = |x: &str| x.to_string();
    assert_eq!(
        digest(&all),
        vec![
            (s("approve"), a.clone(), vec![0], s("local")),
            (s("applied"), a.clone(), vec![0], s("")),
            (s("reject"), b.clone(), vec![0], s("local")),
            (s("approve"), r.clone(), vec![0], s("local")),
            (s("applied"), r.clone(), vec![0], s("")),
            (s("rollback"), r.clone(), vec![0], s("local")),
            (s("reverted"), r.clone(), vec![0], s("local")),
        ],
        "{all:#?}"
    );
    // Each decision's time and arguments are those the execution records.
    for (i, id) in [(0, &a), (2, &b), (3, &r), (5, &r)] {
        let (_, e) = get(&c, format!("{base}/api/executions/{id}")).await;
        let d = e["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == all[i]["event"])
            .unwrap_or_else(|| panic!("no {} decision on {e}", all[i]["event"]));
        assert_eq!(all[i]["at"], d["at"], "{e}");
        assert_eq!(all[i]["calls"][0]["args"], e["log"][0]["args"], "{e}");
    }
    assert_eq!(all[0]["calls"][0]["args"], json!({"title": "approved"}));

    // The window: `since` at the rejection drops what came before it; `until` ends it.
    let at = |i: usize| all[i]["at"].as_i64().unwrap();
    let (_, late) = get(&c, format!("{base}/api/audit?since={}", at(2))).await;
    let later: Vec<Value> = all
        .iter()
        .filter(|r| r["at"].as_i64() >= Some(at(2)))
        .cloned()
        .collect();
    assert_eq!(late.as_array().unwrap(), &later);
    let (_, early) = get(
        &c,
        format!("{base}/api/audit?since={since}&until={}", at(2)),
    )
    .await;
    let earlier: Vec<Value> = all
        .iter()
        .filter(|r| r["at"].as_i64() < Some(at(2)))
        .cloned()
        .collect();
    assert_eq!(early.as_array().unwrap(), &earlier);
    assert!(!earlier.is_empty() && earlier.len() + later.len() == all.len());

    // Deleting the rejected and the rolled-back runs, and pruning to none (the approved
    // write stays, young), leaves the export as it was: their audit trail is archived.
    for id in [&b, &r] {
        let gone = c
            .delete(format!("{base}/api/executions/{id}"))
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(gone.status(), 200, "deleting {id}");
        let (status, _) = get(&c, format!("{base}/api/executions/{id}")).await;
        assert_eq!(status, 404, "{id} is gone");
    }
    let (status, body) = post(&c, format!("{base}/api/prune"), json!({"keep": 0})).await;
    assert_eq!(status, 200, "{body}");
    let (status, after) = get(&c, format!("{base}/api/audit?since={since}")).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(
        after.as_array().unwrap(),
        &all,
        "the decisions of deleted runs are still exported"
    );

    // The same records from the CLI through the server, with --since in RFC 3339.
    let rfc = codemode_server::when::rfc3339(since);
    let lines = codemode(&["--server", base, "audit", "--since", &rfc]);
    let remote: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(remote, all);

    // And from the store itself, as CSV: one row per record, in the same order.
    if local {
        let csv = codemode(&[
            "--store",
            store,
            "audit",
            "--since",
            &since.to_string(),
            "--format",
            "csv",
        ]);
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows[0], codemode_server::audit::CSV_HEADER);
        assert_eq!(rows.len(), all.len() + 1, "{csv}");
        for (row, record) in rows[1..].iter().zip(&all) {
            let want = format!("{},{},", record["time"].as_str().unwrap(), record["at"]);
            let event = format!(",{},", record["event"].as_str().unwrap());
            assert!(
                row.starts_with(&want) && row.contains(&event),
                "{row} vs {record}"
            );
        }
    }

    // A time that does not parse is refused, naming the accepted forms.
    let (status, body) = get(&c, format!("{base}/api/audit?since=yesterday")).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("RFC 3339"),
        "{body}"
    );
    let out = Command::new(BIN)
        .args(["--server", base, "audit", "--since", "yesterday"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--since") && err.contains("RFC 3339") && err.contains("epoch milliseconds"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_export_on_sqlite_matches_the_decisions_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("audit.db").display());
    audit_matches_the_decisions(&store, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_export_on_postgres_matches_the_decisions_in_order() {
    let Some(db) = ScratchDatabase::for_tests("audit_export_on_postgres")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    audit_matches_the_decisions(db.url(), true).await;
}
