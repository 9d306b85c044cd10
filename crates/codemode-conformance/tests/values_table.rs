//! Every row of the tables in `docs/values.md`, run: each example sent to a connector, kept by
//! `codemode.step` and replayed from the log after an approval, and returned as the final
//! result; each JSON a connector returns, seen by the code on a replay. On a SQLite file.

use codemode::{Outcome, Runtime, RustConnector, RustTool};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

const SAME: &str = include_str!("values_same.js");

fn doc() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/values.md");
    std::fs::read_to_string(root).expect("docs/values.md")
}

/// The rows of the table under `heading`: cells, trimmed, without the header.
fn rows(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let section = doc.split(heading).nth(1).expect("the section");
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The text between the first pair of backticks.
fn code(cell: &str) -> &str {
    let start = cell.find('`').expect("a code span") + 1;
    let end = start + cell[start..].find('`').expect("its end");
    &cell[start..end]
}

/// Whether `text` holds the pieces of `pattern` (split at `…`) in order, the first at its start
/// when `anchored`.
fn matches(text: &str, pattern: &str, anchored: bool) -> bool {
    let mut rest = text;
    for (i, piece) in pattern.split('…').enumerate() {
        match rest.find(piece) {
            Some(at) if !(anchored && i == 0 && at != 0) => rest = &rest[at + piece.len()..],
            _ => return false,
        }
    }
    true
}

struct Rig {
    rt: Runtime,
    sent: Arc<Mutex<Vec<Value>>>,
    given: Arc<Mutex<Value>>,
}

fn rig(dir: &tempfile::TempDir) -> Rig {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let given = Arc::new(Mutex::new(Value::Null));
    let (s, g) = (sent.clone(), given.clone());
    let probe = RustConnector::new("probe")
        .tool(
            RustTool::new("echo", move |args: Value, _ctx| {
                s.lock().unwrap().push(args.clone());
                async move { Ok(args) }
            })
            .read_only(),
        )
        .tool(
            // The value is handed over, not copied (copying one 10,000 deep would recurse).
            RustTool::new("give", move |_args, _ctx| {
                let value = std::mem::take(&mut *g.lock().unwrap());
                async move { Ok(value) }
            })
            .read_only(),
        )
        .tool(RustTool::new("note", |_args, _ctx| async { Ok(json!(null)) }).read_only())
        .tool(RustTool::new("gate", |_args, _ctx| async {
            Ok(json!(null))
        }));
    let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("v.db")).unwrap());
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let rt = Runtime::builder(store, executor)
        .connector(probe)
        .build()
        .unwrap();
    Rig { rt, sent, given }
}

/// Runs `code` to its pause, approves, and returns the outcome of the replayed pass.
async fn through_a_replay(rt: &Runtime, code: &str) -> Outcome {
    let paused = rt.call(code).await.unwrap();
    match paused {
        Outcome::Paused { .. } => rt.approve(paused.execution_id()).await.unwrap(),
        other => other,
    }
}

fn check_refusal(failures: &mut Vec<String>, row: &str, column: &str, cell: &str, got: &str) {
    let pattern = code(cell);
    if !matches(got, pattern, true) {
        failures.push(format!(
            "{row} / {column}: expected `{pattern}`, got `{got}`"
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_values_table_holds() {
    let dir = tempfile::tempdir().unwrap();
    let rig = rig(&dir);
    let doc = doc();
    let table = rows(&doc, "## From the code");
    assert!(table.len() >= 25, "{} rows", table.len());
    let mut failures = Vec::new();
    for row in &table {
        let [kind, example, wire, step, result] = &row[..] else {
            panic!("a row of five cells: {row:?}");
        };
        let expr = code(example);
        rig.sent.lock().unwrap().clear();
        let program = format!(
            r#"async () => {{
  {SAME}
  const make = () => ({{ v: ({expr}) }});
  const out = {{}};
  try {{ await probe.echo(make()); out.wire = "sent"; }} catch (e) {{ out.wire = "refused: " + e.message; }}
  try {{
    const s = await codemode.step("v", make);
    out.step = same(s, make(), false) ? "same" : "changed";
  }} catch (e) {{ out.step = "refused: " + e.message; }}
  await probe.note(out);
  await probe.gate({{}});
  return out;
}}"#
        );
        let outcome = through_a_replay(&rig.rt, &program).await;
        let Outcome::Completed { result: out, .. } = outcome else {
            failures.push(format!("{kind}: {outcome:?}"));
            continue;
        };
        // To a connector.
        let got = out["wire"].as_str().unwrap_or_default().to_string();
        if let Some(refusal) = wire.strip_prefix("refused: ") {
            check_refusal(
                &mut failures,
                kind,
                "connector",
                refusal,
                got.trim_start_matches("refused: "),
            );
        } else {
            let sent = rig.sent.lock().unwrap().first().cloned();
            let arrived = sent.as_ref().and_then(|args| args.get("v").cloned());
            let expected =
                (wire != "left out").then(|| serde_json::from_str::<Value>(code(wire)).unwrap());
            if got != "sent" || arrived != expected {
                failures.push(format!(
                    "{kind} / connector: expected {expected:?}, got {got} {arrived:?}"
                ));
            }
        }
        // A step, replayed.
        let got = out["step"].as_str().unwrap_or_default();
        if let Some(refusal) = step.strip_prefix("refused: ") {
            check_refusal(
                &mut failures,
                kind,
                "step",
                refusal,
                got.trim_start_matches("refused: "),
            );
        } else if !step.starts_with("same") || got != "same" {
            failures.push(format!("{kind} / step: expected {step}, got {got}"));
        }
        // The final result.
        let outcome = rig
            .rt
            .call(&format!("async () => ({{ v: ({expr}) }})"))
            .await
            .unwrap();
        match (result.strip_prefix("refused: "), outcome) {
            (Some(refusal), Outcome::Error { error, .. }) => {
                if !matches(&error, code(refusal), false) {
                    failures.push(format!(
                        "{kind} / result: expected `{}`, got `{error}`",
                        code(refusal)
                    ));
                }
            }
            (None, Outcome::Completed { result: value, .. }) => {
                let expected = (result != "left out")
                    .then(|| serde_json::from_str::<Value>(code(result)).unwrap());
                if value.get("v").cloned() != expected {
                    failures.push(format!(
                        "{kind} / result: expected {expected:?}, got {value}"
                    ));
                }
            }
            (_, other) => {
                failures.push(format!("{kind} / result: expected {result}, got {other:?}"))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "rows that do not hold:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_connector_table_holds() {
    let dir = tempfile::tempdir().unwrap();
    let rig = rig(&dir);
    let doc = doc();
    let table = rows(&doc, "## From a connector");
    assert!(table.len() >= 8, "{} rows", table.len());
    let mut failures = Vec::new();
    for row in &table {
        let [returned, seen] = &row[..] else {
            panic!("a row of two cells: {row:?}");
        };
        let value = match returned.as_str() {
            "a `$bigint` of 10,001 digits" => json!({ "$bigint": "7".repeat(10_001) }),
            "nested 10,000 deep" => {
                let mut v = json!(1);
                for _ in 0..10_000 {
                    v = Value::Array(vec![v]);
                }
                v
            }
            other => serde_json::from_str(code(other)).unwrap(),
        };
        *rig.given.lock().unwrap() = value;
        let program = format!(
            r#"async () => {{
  {SAME}
  const v = await probe.give({{}});
  const ok = same(v, ({expr}), false);
  await probe.note({{ ok }});
  await probe.gate({{}});
  return ok;
}}"#,
            expr = if seen.starts_with("fails: ") {
                "null"
            } else {
                code(seen)
            }
        );
        let outcome = through_a_replay(&rig.rt, &program).await;
        match (seen.strip_prefix("fails: "), outcome) {
            (Some(failure), Outcome::Error { error, .. }) => {
                if !matches(&error, code(failure), false) {
                    failures.push(format!(
                        "{returned}: expected `{}`, got `{error}`",
                        code(failure)
                    ));
                }
            }
            (
                None,
                Outcome::Completed {
                    result: Value::Bool(true),
                    ..
                },
            ) => {}
            (_, other) => failures.push(format!("{returned}: expected {seen}, got {other:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "rows that do not hold:\n{}",
        failures.join("\n")
    );
}
