//! What the file holds after a delete or a prune: rows the `Store` API cannot show.

mod common;

use codemode::{Commit, Deletion, EntryState, ExecutionStatus, Store, Transition};
use common::{entry, execution, lease, store, RT};

const FAR: i64 = i64::MAX / 2;

/// The rows of `log_entries` in the file at `path`.
fn log_rows(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT count(*) FROM log_entries", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn prune_and_delete_remove_the_log_rows_of_their_executions() {
    let (dir, path, s) = store();
    for id in ["pruned", "deleted"] {
        let mut e = execution(id, 1);
        e.log = vec![entry(0, EntryState::Applied), entry(1, EntryState::Applied)];
        s.insert_execution(RT, &e, &lease("n", FAR), 50)
            .await
            .unwrap();
    }
    assert_eq!(log_rows(&path), 4);
    let finish = |id: &str| Commit {
        execution_id: id.into(),
        owner: Some("n".into()),
        entries: vec![],
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Completed,
            2,
        )),
        clock: None,
    };
    assert!(s.commit(RT, &finish("pruned")).await.unwrap());
    assert_eq!(s.prune_executions(RT, 0).await.unwrap(), 1);
    assert_eq!(log_rows(&path), 2, "after the prune");
    assert!(s.commit(RT, &finish("deleted")).await.unwrap());
    assert_eq!(
        s.delete_execution(RT, "deleted", 3).await.unwrap(),
        Deletion::Deleted(ExecutionStatus::Completed)
    );
    drop(s);
    assert_eq!(log_rows(&path), 0, "after the delete");
    drop(dir);
}
