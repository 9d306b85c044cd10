//! Snippets, and runtime names: runtimes with different names share a store but never each
//! other's executions or snippets.

use super::{
    entry, execution, insert_execution, listed, move_through, read, snippet, wins_claim, FAR, RT,
};
use codemode::{EntryState, ExecutionStatus, Snippet, Store};
use ExecutionStatus::{Completed, Paused, Running};

/// Snippets are saved, replaced by name, read back equal, listed bytewise by name and deleted.
pub async fn snippets_are_saved_replaced_listed_by_name_and_deleted(store: &dyn Store) {
    assert_eq!(store.snippet(RT, "b").await.unwrap(), None);
    assert!(store.snippets(RT).await.unwrap().is_empty());
    for name in ["b", "a", "B", "c"] {
        store.put_snippet(RT, &snippet(name)).await.unwrap();
    }
    assert_eq!(store.snippet(RT, "a").await.unwrap(), Some(snippet("a")));
    let replaced = Snippet {
        code: "async () => 2".into(),
        input_schema: None,
        connectors: vec![],
        saved_at: 2_000,
        ..snippet("b")
    };
    store.put_snippet(RT, &replaced).await.unwrap();
    assert_eq!(
        store.snippet(RT, "b").await.unwrap(),
        Some(replaced.clone())
    );
    assert_eq!(store.snippet(RT, "zz").await.unwrap(), None);
    // Ordered by name, bytewise: upper case first.
    assert_eq!(
        store.snippets(RT).await.unwrap(),
        [snippet("B"), snippet("a"), replaced, snippet("c")]
    );
    assert!(store.delete_snippet(RT, "a").await.unwrap(), "deleting a");
    assert!(
        !store.delete_snippet(RT, "a").await.unwrap(),
        "deleting a twice"
    );
    assert!(
        !store.delete_snippet(RT, "zz").await.unwrap(),
        "deleting zz"
    );
    assert_eq!(store.snippet(RT, "a").await.unwrap(), None);
    let names: Vec<_> = store
        .snippets(RT)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["B", "b", "c"]);
}

/// One execution id in two runtime names is two executions that never touch each other.
pub async fn runtime_names_keep_separate_executions(store: &dyn Store) {
    for rt in ["research", "operations"] {
        let mut e = execution("same-id", 1);
        e.code = format!("code of {rt}");
        e.log = vec![entry(0, EntryState::Pending)];
        insert_execution(store, rt, &e, 50).await;
    }
    move_through(store, "research", "same-id", &[Paused], 2).await;
    let research = read(store, "research", "same-id").await;
    assert_eq!(
        (research.code.as_str(), research.status),
        ("code of research", Paused)
    );
    let operations = read(store, "operations", "same-id").await;
    assert_eq!(
        (operations.code.as_str(), operations.status),
        ("code of operations", Running)
    );
    assert_eq!(store.pending("research", None).await.unwrap().len(), 1);
    assert!(store.pending("operations", None).await.unwrap().is_empty());
    assert!(listed(store, RT, None, None).await.is_empty());
    assert_eq!(store.execution("third", "same-id").await.unwrap(), None);
    let stale = store.stale_executions("research", i64::MAX, 0).await;
    assert_eq!(stale.unwrap(), [("same-id".to_string(), Paused)]);
    let stale = store.stale_executions("operations", i64::MAX, 0).await;
    assert!(stale.unwrap().is_empty(), "the held run of operations");
    assert!(
        !wins_claim(store, "operations", "same-id", Paused, "m", FAR, 3).await,
        "a paused claim in operations"
    );

    // Pruning in one name leaves the other alone, on insert or by hand.
    move_through(store, "operations", "same-id", &[Completed], 3).await;
    let pruned = insert_execution(store, "research", &execution("next", 4), 0).await;
    assert_eq!(pruned, 0, "inserting into research pruned operations");
    assert_eq!(store.prune_executions("research", 0).await.unwrap(), 0);
    assert_eq!(store.prune_executions("operations", 0).await.unwrap(), 1);
    assert_eq!(read(store, "research", "same-id").await, research);

    // So does deleting.
    move_through(store, "research", "next", &[Completed], 5).await;
    let ops = execution("same-id", 6);
    insert_execution(store, "operations", &ops, 50).await;
    move_through(store, "operations", "same-id", &[Completed], 7).await;
    let deleted = store.delete_execution("operations", "same-id", 8).await;
    assert_eq!(deleted.unwrap(), codemode::Deletion::Deleted(Completed));
    assert_eq!(
        store.delete_execution("third", "same-id", 8).await.unwrap(),
        codemode::Deletion::Unknown
    );
    assert_eq!(read(store, "research", "same-id").await, research);
    assert_eq!(
        listed(store, "research", None, None).await,
        ["next", "same-id"]
    );
}

/// One snippet name in two runtime names is two snippets that never touch each other.
pub async fn runtime_names_keep_separate_snippets(store: &dyn Store) {
    let research = snippet("shared");
    let operations = Snippet {
        code: "async () => 'operations'".into(),
        ..snippet("shared")
    };
    store.put_snippet("research", &research).await.unwrap();
    store.put_snippet("operations", &operations).await.unwrap();
    store
        .put_snippet("research", &snippet("only-research"))
        .await
        .unwrap();
    let got = store.snippet("operations", "shared").await.unwrap();
    assert_eq!(got, Some(operations.clone()));
    assert_eq!(store.snippets("operations").await.unwrap(), [operations]);
    assert!(store.snippets("third").await.unwrap().is_empty());
    assert!(store.snippets(RT).await.unwrap().is_empty());
    assert_eq!(store.snippet("third", "shared").await.unwrap(), None);
    assert!(!store.delete_snippet("third", "shared").await.unwrap());
    assert!(store.delete_snippet("operations", "shared").await.unwrap());
    assert_eq!(
        store.snippets("research").await.unwrap(),
        [snippet("only-research"), research]
    );
}
