//! Every `Store` method on a real server, one scratch database per test.

mod common;

use codemode::{Commit, EntryState, ExecutionStatus, Snippet, Store, Transition};
use common::{entry, execution, insert, lease};
use serde_json::json;

const RT: &str = "rt";

fn pause(id: &str, owner: &str, at: i64, entries: Vec<codemode::LogEntry>) -> Commit {
    Commit {
        execution_id: id.into(),
        owner: Some(owner.into()),
        entries,
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Paused,
            at,
        )),
    }
}

#[tokio::test]
async fn insert_read_and_list() {
    let (_db, store) = setup_or_skip!("insert_read_and_list");
    let mut e = execution("a", 10);
    e.log = vec![entry(0, EntryState::Applied)];
    e.logs = vec!["hello".into(), "wörld ✓".into()];
    assert_eq!(
        store
            .insert_execution(RT, &e, &lease("n1", 1000), 50)
            .await
            .unwrap(),
        0
    );
    let got = store.execution(RT, "a").await.unwrap().unwrap();
    assert_eq!(got, e);
    // JSON is kept as written: object keys keep their order.
    let text = serde_json::to_string(&got.log[0].args).unwrap();
    assert_eq!(text, r#"{"value":0,"b":1,"a":2}"#);
    assert!(store.execution(RT, "missing").await.unwrap().is_none());

    insert(&store, RT, "b", "n1", 20).await;
    insert(&store, RT, "c", "n1", 20).await;
    let ids = |v: Vec<codemode::Execution>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.executions(RT, None, None).await.unwrap()),
        ["c", "b", "a"]
    );
    assert_eq!(
        ids(store.executions(RT, Some(2), None).await.unwrap()),
        ["c", "b"]
    );
    let paused = store
        .executions(RT, None, Some(ExecutionStatus::Paused))
        .await
        .unwrap();
    assert!(paused.is_empty());
    let listed = store.executions(RT, Some(10), None).await.unwrap();
    assert_eq!(listed[2].log.len(), 1, "lists carry their logs");

    let dup = store
        .insert_execution(RT, &execution("a", 30), &lease("n1", 1000), 50)
        .await
        .unwrap_err();
    assert!(dup.to_string().contains("already exists"), "{dup}");
}

#[tokio::test]
async fn commit_is_a_compare_and_set() {
    let (_db, store) = setup_or_skip!("commit_is_a_compare_and_set");
    insert(&store, RT, "x", "n1", 10).await;

    // Entries under the lease owner.
    let c = Commit {
        execution_id: "x".into(),
        owner: Some("n1".into()),
        entries: vec![entry(0, EntryState::Executing)],
        transition: None,
    };
    assert!(store.commit(RT, &c).await.unwrap());
    // Another owner writes nothing.
    let c2 = Commit {
        owner: Some("n2".into()),
        entries: vec![entry(0, EntryState::Applied), entry(1, EntryState::Applied)],
        ..c.clone()
    };
    assert!(!store.commit(RT, &c2).await.unwrap());
    let got = store.execution(RT, "x").await.unwrap().unwrap();
    assert_eq!(got.log, vec![entry(0, EntryState::Executing)]);
    // No owner and no transition: written while the execution exists.
    let c3 = Commit {
        owner: None,
        entries: vec![entry(0, EntryState::Applied)],
        ..c.clone()
    };
    assert!(store.commit(RT, &c3).await.unwrap());
    let missing = Commit {
        execution_id: "nope".into(),
        ..c3.clone()
    };
    assert!(!store.commit(RT, &missing).await.unwrap());

    // Wrong expected status: nothing written, not even the entries.
    let wrong = Commit {
        execution_id: "x".into(),
        owner: None,
        entries: vec![entry(5, EntryState::Applied)],
        transition: Some(Transition::new(
            ExecutionStatus::Paused,
            ExecutionStatus::Rejected,
            20,
        )),
    };
    assert!(!store.commit(RT, &wrong).await.unwrap());
    let got = store.execution(RT, "x").await.unwrap().unwrap();
    assert_eq!(got.log.len(), 1);
    assert_eq!(got.status, ExecutionStatus::Running);

    // The pause with its pending entry, in one statement.
    assert!(store
        .commit(
            RT,
            &pause("x", "n1", 30, vec![entry(1, EntryState::Pending)])
        )
        .await
        .unwrap());
    let got = store.execution(RT, "x").await.unwrap().unwrap();
    assert_eq!(got.status, ExecutionStatus::Paused);
    assert_eq!(got.updated_at, 30);
    assert_eq!(got.log.len(), 2);
    // The same pause again loses: it is no longer running.
    assert!(!store
        .commit(RT, &pause("x", "n1", 31, vec![]))
        .await
        .unwrap());

    // Completion records result, error and logs; NULLs keep what was recorded.
    assert!(store
        .claim(RT, "x", ExecutionStatus::Paused, &lease("n2", 1_000), 40)
        .await
        .unwrap());
    let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Completed, 50);
    t.result = Some(json!({ "done": true, "a": [1, "x"] }));
    t.logs = Some(vec!["line".into()]);
    let done = Commit {
        execution_id: "x".into(),
        owner: Some("n2".into()),
        entries: vec![entry(1, EntryState::Applied)],
        transition: Some(t),
    };
    assert!(store.commit(RT, &done).await.unwrap());
    let got = store.execution(RT, "x").await.unwrap().unwrap();
    assert_eq!(got.status, ExecutionStatus::Completed);
    assert_eq!(got.result, Some(json!({ "done": true, "a": [1, "x"] })));
    assert_eq!(got.logs, vec!["line".to_string()]);
    assert_eq!(got.log[1].state, EntryState::Applied);
    let rb = Commit {
        execution_id: "x".into(),
        owner: None,
        entries: vec![],
        transition: Some(Transition::new(
            ExecutionStatus::Completed,
            ExecutionStatus::RolledBack,
            60,
        )),
    };
    assert!(store.commit(RT, &rb).await.unwrap());
    let got = store.execution(RT, "x").await.unwrap().unwrap();
    assert_eq!(got.status, ExecutionStatus::RolledBack);
    assert_eq!(got.result, Some(json!({ "done": true, "a": [1, "x"] })));

    // An illegal transition is refused before anything is written.
    let illegal = Commit {
        transition: Some(Transition::new(
            ExecutionStatus::Completed,
            ExecutionStatus::Running,
            70,
        )),
        ..rb
    };
    let err = store.commit(RT, &illegal).await.unwrap_err();
    assert!(err.to_string().contains("illegal"), "{err}");
}

#[tokio::test]
async fn the_lease_owner_is_checked_on_transitions() {
    let (_db, store) = setup_or_skip!("the_lease_owner_is_checked_on_transitions");
    insert(&store, RT, "x", "n1", 10).await;
    assert!(!store
        .commit(RT, &pause("x", "n2", 20, vec![]))
        .await
        .unwrap());
    assert!(store
        .commit(RT, &pause("x", "n1", 20, vec![]))
        .await
        .unwrap());
}

#[tokio::test]
async fn claim_and_lease_expiry() {
    let (_db, store) = setup_or_skip!("claim_and_lease_expiry");
    // Running under n1 until 1000.
    store
        .insert_execution(RT, &execution("x", 10), &lease("n1", 1000), 50)
        .await
        .unwrap();
    // The lease holds: nobody takes it over.
    assert!(!store
        .claim(RT, "x", ExecutionStatus::Running, &lease("n2", 5000), 999)
        .await
        .unwrap());
    // Not paused: an approval claim loses.
    assert!(!store
        .claim(RT, "x", ExecutionStatus::Paused, &lease("n2", 5000), 500)
        .await
        .unwrap());
    // Expired: n2 takes it over, and now owns it; n1 can no longer write.
    assert!(store
        .claim(RT, "x", ExecutionStatus::Running, &lease("n2", 5000), 1001)
        .await
        .unwrap());
    assert!(!store
        .commit(RT, &pause("x", "n1", 1002, vec![]))
        .await
        .unwrap());
    assert!(store
        .commit(RT, &pause("x", "n2", 1002, vec![]))
        .await
        .unwrap());
    // Leaving running cleared the lease; claims from paused win once.
    assert!(store
        .claim(RT, "x", ExecutionStatus::Paused, &lease("n3", 9000), 1003)
        .await
        .unwrap());
    assert!(!store
        .claim(RT, "x", ExecutionStatus::Paused, &lease("n4", 9000), 1003)
        .await
        .unwrap());
    let got = store.execution(RT, "x").await.unwrap().unwrap();
    assert_eq!(got.updated_at, 1003);
    // A terminal status is no claim source at all.
    let err = store
        .claim(
            RT,
            "x",
            ExecutionStatus::Completed,
            &lease("n4", 9000),
            1003,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("illegal"), "{err}");
    assert!(!store
        .claim(
            RT,
            "nope",
            ExecutionStatus::Paused,
            &lease("n4", 9000),
            1003
        )
        .await
        .unwrap());
}

#[tokio::test]
async fn stale_and_pending() {
    let (_db, store) = setup_or_skip!("stale_and_pending");
    // p: paused at 20 with one pending action; r: running, lease until 100; q: running, fresh.
    insert(&store, RT, "p", "n1", 10).await;
    store
        .commit(
            RT,
            &pause(
                "p",
                "n1",
                20,
                vec![entry(0, EntryState::Applied), entry(1, EntryState::Pending)],
            ),
        )
        .await
        .unwrap();
    store
        .insert_execution(RT, &execution("r", 11), &lease("n1", 100), 50)
        .await
        .unwrap();
    store
        .insert_execution(RT, &execution("q", 12), &lease("n1", 100_000), 50)
        .await
        .unwrap();
    let stale = store.stale_executions(RT, 50, 99).await.unwrap();
    assert_eq!(stale, vec![("p".to_string(), ExecutionStatus::Paused)]);
    let stale = store.stale_executions(RT, 50, 101).await.unwrap();
    assert_eq!(
        stale,
        vec![
            ("p".to_string(), ExecutionStatus::Paused),
            ("r".to_string(), ExecutionStatus::Running)
        ]
    );
    assert!(store.stale_executions(RT, 15, 101).await.unwrap().len() == 1);

    let pending = store.pending(RT, None).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].execution_id, "p");
    assert_eq!(pending[0].seq, 1);
    assert_eq!(pending[0].args, json!({ "value": 1, "b": 1, "a": 2 }));
    assert_eq!(store.pending(RT, Some("p")).await.unwrap().len(), 1);
    assert!(store.pending(RT, Some("r")).await.unwrap().is_empty());
}

#[tokio::test]
async fn delete_and_retention() {
    let (_db, store) = setup_or_skip!("delete_and_retention");
    // Five terminal executions, one paused, one running.
    for i in 0..5 {
        let id = format!("t{i}");
        insert(&store, RT, &id, "n1", i).await;
        let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, i);
        t.error = Some("boom".into());
        let c = Commit {
            execution_id: id,
            owner: Some("n1".into()),
            entries: vec![entry(0, EntryState::Applied)],
            transition: Some(t),
        };
        assert!(store.commit(RT, &c).await.unwrap());
    }
    insert(&store, RT, "p", "n1", 0).await;
    store
        .commit(RT, &pause("p", "n1", 1, vec![]))
        .await
        .unwrap();
    insert(&store, RT, "r", "n1", 0).await;

    // Inserting with keep = 3 prunes the two oldest terminal ones.
    let pruned = store
        .insert_execution(RT, &execution("new", 100), &lease("n1", 1000), 3)
        .await
        .unwrap();
    assert_eq!(pruned, 2);
    let mut ids: Vec<String> = store
        .executions(RT, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["new", "p", "r", "t2", "t3", "t4"]);
    // By hand: running and paused are never pruned.
    assert_eq!(store.prune_executions(RT, 0).await.unwrap(), 3);
    assert_eq!(store.prune_executions(RT, 0).await.unwrap(), 0);
    assert_eq!(store.executions(RT, None, None).await.unwrap().len(), 3);

    assert_eq!(
        store.delete_execution(RT, "p").await.unwrap(),
        Some(ExecutionStatus::Paused)
    );
    assert_eq!(store.delete_execution(RT, "p").await.unwrap(), None);
    assert!(store.pending(RT, None).await.unwrap().is_empty());
}

#[tokio::test]
async fn snippets() {
    let (_db, store) = setup_or_skip!("snippets");
    let s = |name: &str, code: &str| Snippet {
        name: name.into(),
        description: "does things".into(),
        code: code.into(),
        saved_at: 5,
        input_schema: Some(
            json!({ "type": "object", "properties": { "n": { "type": "number" } } }),
        ),
        connectors: vec!["probe".into()],
    };
    store.put_snippet(RT, &s("b", "1")).await.unwrap();
    store.put_snippet(RT, &s("a", "2")).await.unwrap();
    store.put_snippet(RT, &s("B", "3")).await.unwrap();
    store.put_snippet(RT, &s("a", "4")).await.unwrap();
    assert_eq!(store.snippet(RT, "a").await.unwrap(), Some(s("a", "4")));
    assert_eq!(store.snippet(RT, "zz").await.unwrap(), None);
    let names: Vec<String> = store
        .snippets(RT)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    // Ordered by name, bytewise, as on SQLite.
    assert_eq!(names, ["B", "a", "b"]);
    assert!(store.delete_snippet(RT, "a").await.unwrap());
    assert!(!store.delete_snippet(RT, "a").await.unwrap());
    let bare = Snippet {
        input_schema: None,
        connectors: vec![],
        ..s("c", "5")
    };
    store.put_snippet(RT, &bare).await.unwrap();
    assert_eq!(store.snippet(RT, "c").await.unwrap(), Some(bare));
}

#[tokio::test]
async fn runtimes_never_see_each_other() {
    let (_db, store) = setup_or_skip!("runtimes_never_see_each_other");
    insert(&store, "one", "same-id", "n1", 10).await;
    insert(&store, "two", "same-id", "n1", 10).await;
    store
        .commit(
            "one",
            &pause("same-id", "n1", 20, vec![entry(0, EntryState::Pending)]),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .execution("two", "same-id")
            .await
            .unwrap()
            .unwrap()
            .status,
        ExecutionStatus::Running
    );
    assert!(store.pending("two", None).await.unwrap().is_empty());
    assert_eq!(store.pending("one", None).await.unwrap().len(), 1);
    assert!(store.execution("three", "same-id").await.unwrap().is_none());
    assert!(store
        .stale_executions("two", 100, 0)
        .await
        .unwrap()
        .is_empty());
    store
        .put_snippet(
            "one",
            &Snippet {
                name: "s".into(),
                description: String::new(),
                code: "1".into(),
                saved_at: 0,
                input_schema: None,
                connectors: vec![],
            },
        )
        .await
        .unwrap();
    assert!(store.snippets("two").await.unwrap().is_empty());
    assert!(!store.delete_snippet("two", "s").await.unwrap());
    assert_eq!(
        store.delete_execution("two", "same-id").await.unwrap(),
        Some(ExecutionStatus::Running)
    );
    assert!(store.execution("one", "same-id").await.unwrap().is_some());
    assert_eq!(store.prune_executions("two", 0).await.unwrap(), 0);
}
