//! Two `codemode serve` nodes on one PostgreSQL database share executions and the demo's tasks.
//!
//! Runs on the PostgreSQL server of `CODEMODE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) in a scratch database dropped at the end.
//! Without a server it prints SKIPPED; with `CI` set it fails instead.

mod common;

use codemode_postgres::ScratchDatabase;
use common::{get, post, serve_on, BIN};
use serde_json::json;
use std::process::{Command, Stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_postgres_share_approvals_and_tasks() {
    let Some(db) = ScratchDatabase::for_tests("two_nodes_on_one_postgres")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = serve_on(dir.path(), db.url(), &["--listen", "127.0.0.1:0"], &[]);
    let b = serve_on(dir.path(), db.url(), &["--listen", "127.0.0.1:0"], &[]);
    let c = common::client();

    let code = "const t = await tasks.create_task({ title: 'shared' }); return t.title;";
    let (_, outcome) = post(&c, format!("{}/api/run", a.base), json!({ "code": code })).await;
    assert_eq!(outcome["status"], "paused", "{outcome}");
    let id = outcome["executionId"].as_str().unwrap().to_string();

    // Node B sees the pause and approves it.
    let (_, pending) = get(&c, format!("{}/api/pending", b.base)).await;
    assert_eq!(pending[0]["executionId"], id.as_str(), "{pending}");
    let (status, approved) = post(
        &c,
        format!("{}/api/executions/{id}/approve", b.base),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "completed", "{approved}");
    assert_eq!(approved["result"], "shared");

    // Node A sees it completed, and the task in the shared demo tables.
    let (_, e) = get(&c, format!("{}/api/executions/{id}", a.base)).await;
    assert_eq!(e["status"], "completed", "{e}");
    let (_, listed) = post(
        &c,
        format!("{}/api/run", a.base),
        json!({ "code": "return (await tasks.list_tasks({})).tasks.map(t => t.title)" }),
    )
    .await;
    assert_eq!(listed["result"], json!(["shared"]), "{listed}");

    // Approving again on node A: already handled.
    let (status, body) = post(
        &c,
        format!("{}/api/executions/{id}/approve", a.base),
        json!({}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("already"),
        "{body}"
    );

    // Rollback from node A deletes the task node B's approval created.
    let (status, report) = post(
        &c,
        format!("{}/api/executions/{id}/rollback", a.base),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{report}");
    let (_, listed) = post(
        &c,
        format!("{}/api/run", b.base),
        json!({ "code": "return (await tasks.list_tasks({})).tasks.length" }),
    )
    .await;
    assert_eq!(listed["result"], 0, "{listed}");
    drop((a, b));
}

#[test]
fn a_bad_postgres_url_names_the_cause_and_hides_the_password() {
    let dir = tempfile::tempdir().unwrap();
    for (url, cause) in [
        ("postgres://someone:hunter2@127.0.0.1:1/x", "127.0.0.1:1"),
        ("postgres://someone:hunter2@127.0.0.1:5432:99/x", "postgres"),
    ] {
        let out = Command::new(BIN)
            .current_dir(dir.path())
            .args(["pending", "--store", url])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(cause), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}

/// `codemode run` on a PostgreSQL store whose URL carries a password prints approve and
/// reject lines without it, says the password comes from PGPASSWORD, and the approve line
/// runs as printed with it set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_for_a_postgres_store_leave_the_password_out_and_run_as_printed() {
    let Some(db) = ScratchDatabase::for_tests("postgres_hint_without_password")
        .await
        .expect("the PostgreSQL test server")
    else {
        return;
    };
    let with_password = db.url().replacen("://postgres@", "://postgres:s3cret@", 1);
    assert_ne!(
        with_password,
        db.url(),
        "the scratch URL names the postgres user"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["--store", &with_password, "run", "-e"])
        .arg("return await tasks.create_task({ title: 'hinted' })")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.contains("PGPASSWORD"), "{text}");
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("approve: "))
        .unwrap_or_else(|| panic!("no approve line: {text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (program, args) = words.split_first().unwrap();
    assert!(program.ends_with("codemode"), "{line}");
    let approved = Command::new(BIN)
        .current_dir(dir.path())
        .args(args.iter().map(|a| a.trim_matches('\'')))
        .env("PGPASSWORD", "s3cret")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&approved.stdout);
    assert!(
        approved.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert!(said.contains("completed"), "{said}");
}
