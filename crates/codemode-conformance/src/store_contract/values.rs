//! Text the stores must keep exactly, whatever characters it holds.

use super::*;
use codemode::{Actor, Decision, DecisionKind};

/// A text holding NUL characters (U+0000), which PostgreSQL's `text` cannot hold as such,
/// next to the marker a store might use to escape them.
const NUL_TEXT: &str = "a\u{0}b \u{1}\u{0}\u{0} end\u{0}";

/// NUL characters in code, arguments, results, errors, logs, decisions and snippets are
/// stored and read back exactly; so is a text that starts with a control character.
pub async fn text_with_nul_characters_round_trips_exactly(store: &dyn Store) {
    let mut first = execution("nul", 1);
    first.code = format!("async () => {{ return {NUL_TEXT:?}; }} // {NUL_TEXT}");
    insert_execution(store, RT, &first, 1_000).await;
    let mut written = entry(0, EntryState::Error);
    written.args = json!({ "text": NUL_TEXT, "\u{0}key": [NUL_TEXT] });
    written.error = Some(format!("failed: {NUL_TEXT}"));
    let mut read_one = entry(1, EntryState::Applied);
    read_one.result = Some(json!({ "body": NUL_TEXT }));
    read_one.decisions = vec![Decision::new(
        DecisionKind::Approve,
        Actor::new(NUL_TEXT),
        2,
        vec![1],
    )];
    let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, 3).with_decision(
        Decision::new(DecisionKind::Cancel, Actor::new(NUL_TEXT), 3, vec![]),
    );
    t.error = Some(format!("Error: {NUL_TEXT}"));
    t.logs = Some(vec![NUL_TEXT.to_string(), "\u{1}plain".to_string()]);
    t.result = Some(json!(NUL_TEXT));
    let end = Commit {
        transition: Some(t.clone()),
        ..commit("nul", Some("n"), vec![written.clone(), read_one.clone()])
    };
    let stored = store
        .commit(RT, &end)
        .await
        .unwrap_or_else(|e| panic!("a commit holding NUL characters failed: {e}"));
    assert!(stored, "a commit holding NUL characters was refused");
    let got = read(store, RT, "nul").await;
    assert_eq!(got.code, first.code, "the code");
    assert_eq!(got.status, ExecutionStatus::Error);
    assert_eq!(got.error, t.error, "the execution's error");
    assert_eq!(Some(got.logs.clone()), t.logs, "the logs");
    assert_eq!(got.result, t.result, "the result");
    assert_eq!(
        got.decisions,
        vec![t.decision.clone().unwrap()],
        "the decision"
    );
    assert_eq!(got.log, vec![written, read_one], "the log entries");
    let listed = store.executions(RT, None, None).await.unwrap();
    assert_eq!(listed, vec![got], "the listing reads the same");

    let mut kept = snippet("nul");
    kept.code = first.code.clone();
    kept.description = format!("\u{1}{NUL_TEXT}");
    store.put_snippet(RT, &kept).await.unwrap();
    assert_eq!(store.snippet(RT, "nul").await.unwrap(), Some(kept));

    // Text that merely looks like an escape is kept as it is, too.
    let mut plain = execution("plain", 2);
    plain.code = "\u{1}\"not an escape\"".into();
    insert_execution(store, RT, &plain, 1_000).await;
    assert_eq!(read(store, RT, "plain").await.code, plain.code);
}
