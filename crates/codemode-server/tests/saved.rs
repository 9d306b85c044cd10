//! A result cut to the model's budget is saved whole to the workspace, and the cut answer's
//! last log line names the file.

use codemode::value::TruncateOptions;
use codemode::{FileStore, Outcome};
use codemode_server::saved::truncate_and_save;
use codemode_workspace::{Workspace, WorkspaceOptions};
use serde_json::{json, Value};
use std::sync::Arc;

fn workspace(dir: &std::path::Path) -> Workspace {
    let store: Arc<dyn FileStore> =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.join("c.db")).unwrap());
    Workspace::new(store, WorkspaceOptions::default()).unwrap()
}

fn big() -> Value {
    json!((0..2000)
        .map(|i| json!({"id": i, "name": format!("item {i}")}))
        .collect::<Vec<_>>())
}

fn completed(result: Value) -> Outcome {
    Outcome::Completed {
        execution_id: "exec-1".into(),
        result,
        logs: vec![],
    }
}

#[tokio::test]
async fn a_cut_result_is_saved_whole_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let (cut, path) =
        truncate_and_save(completed(big()), TruncateOptions::tokens(500), Some(&ws)).await;
    let path = path.expect("saved");
    assert_eq!(path, "/results/exec-1.json");
    let Outcome::Completed { result, logs, .. } = cut else {
        panic!("not completed")
    };
    assert_ne!(result, big(), "the result was not cut");
    let last = logs.last().unwrap();
    assert!(
        last.contains(&format!("state.readJson(\"{path}\")")),
        "{last}"
    );
    assert_eq!(ws.read_json(&path).await.unwrap(), big());
}

#[tokio::test]
async fn a_result_that_fits_or_no_workspace_saves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let small = completed(json!({"ok": true}));
    let (out, path) = truncate_and_save(small.clone(), TruncateOptions::default(), Some(&ws)).await;
    assert_eq!((out, path), (small, None));
    let (cut, path) = truncate_and_save(completed(big()), TruncateOptions::tokens(500), None).await;
    assert_eq!(path, None);
    let Outcome::Completed { logs, .. } = cut else {
        panic!("not completed")
    };
    assert!(!logs.iter().any(|l| l.contains("saved in the workspace")));
    assert!(ws.list("/").await.unwrap().entries.is_empty());
}
