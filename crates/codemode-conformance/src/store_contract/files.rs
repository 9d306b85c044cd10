//! Workspace files ([`FileStore`]): changes checked against their limits in one transaction,
//! keyed changes applied once and reverted to what the file held before, listings by raw
//! prefix; and, for a store that keeps executions too ([`StoreWithFiles`]), undo records that
//! go with their execution.

use super::{execution, insert, lease, move_through, FAR, RT};
use codemode::{
    Deletion, ExecutionStatus, FileChange, FileChangeOutcome, FileInfo, FileOp, FileStore,
    StoreWithFiles, WorkspaceUsage,
};

fn change(path: &str, op: FileOp, key: Option<&str>) -> FileChange {
    FileChange {
        workspace: "w".into(),
        path: path.into(),
        op,
        key: key.map(str::to_string),
        quota_bytes: 20,
        max_file_bytes: 12,
        at_ms: 1_000,
    }
}

async fn text(store: &dyn FileStore, path: &str) -> Option<String> {
    store.read_file("w", path).await.unwrap().map(|f| f.content)
}

fn applied(size: Option<u64>, existed: bool, used_bytes: u64, repeated: bool) -> FileChangeOutcome {
    FileChangeOutcome::Applied {
        size,
        existed,
        used_bytes,
        repeated,
    }
}

/// Write, append and remove change the file; sizes are UTF-8 bytes; a keyed change applied
/// twice is applied once, and its second outcome says so.
pub async fn file_changes_apply_once_per_key_and_count_bytes(store: &dyn FileStore) {
    let w = change("/a", FileOp::Write("é".into()), Some("e:0"));
    assert_eq!(
        store.change_file(&w).await.unwrap(),
        applied(Some(2), false, 2, false),
        "a write creates the file"
    );
    // The quota counts undo records too: the append keeps the 2 bytes before it.
    let a = change("/a", FileOp::Append("xy".into()), Some("e:1"));
    assert_eq!(
        store.change_file(&a).await.unwrap(),
        applied(Some(4), true, 6, false)
    );
    assert_eq!(
        store.change_file(&a).await.unwrap(),
        applied(Some(4), true, 6, true),
        "a repeated key must not append twice"
    );
    assert_eq!(text(store, "/a").await.as_deref(), Some("éxy"));
    let info = store.read_file("w", "/a").await.unwrap().unwrap().info;
    assert_eq!((info.size, info.updated_at), (4, 1_000));
    // A keyed removal keeps the 4 bytes it removed: the workspace still holds 6.
    let r = change("/a", FileOp::Remove, Some("e:2"));
    assert_eq!(
        store.change_file(&r).await.unwrap(),
        applied(None, true, 6, false)
    );
    assert_eq!(text(store, "/a").await, None);
    let missing = change("/none", FileOp::Remove, None);
    assert_eq!(
        store.change_file(&missing).await.unwrap(),
        applied(None, false, 6, false)
    );
}

/// What a keyed change keeps for its revert counts against the quota until the revert
/// frees it; a change without a key keeps nothing.
pub async fn undo_records_count_against_the_quota_until_reverted(store: &dyn FileStore) {
    let unkeyed = change("/a", FileOp::Write("0123456789".into()), None);
    assert_eq!(
        store.change_file(&unkeyed).await.unwrap(),
        applied(Some(10), false, 10, false)
    );
    let keyed = change("/a", FileOp::Write("abcdefghij".into()), Some("u:0"));
    assert_eq!(
        store.change_file(&keyed).await.unwrap(),
        applied(Some(10), true, 20, false),
        "the old 10 bytes are kept for the revert"
    );
    let append = change("/a", FileOp::Append("!".into()), Some("u:1"));
    assert_eq!(
        store.change_file(&append).await.unwrap(),
        FileChangeOutcome::OverQuota {
            used: 20,
            needed: 31,
            quota: 20
        }
    );
    assert_eq!(text(store, "/a").await.as_deref(), Some("abcdefghij"));
    assert!(store.revert_file_change("w", "u:0", 2_000).await.unwrap());
    assert_eq!(text(store, "/a").await.as_deref(), Some("0123456789"));
    let plain = change("/a", FileOp::Append("!".into()), None);
    assert_eq!(
        store.change_file(&plain).await.unwrap(),
        applied(Some(11), true, 11, false),
        "the revert freed what it kept"
    );
}

/// A change past the file limit or the quota writes nothing, not even its undo record.
pub async fn a_file_change_over_a_limit_writes_nothing(store: &dyn FileStore) {
    store
        .change_file(&change("/a", FileOp::Write("0123456789".into()), None))
        .await
        .unwrap();
    let big = change("/b", FileOp::Write("x".repeat(13)), Some("e:0"));
    assert_eq!(
        store.change_file(&big).await.unwrap(),
        FileChangeOutcome::FileTooLarge {
            size: 13,
            limit: 12
        }
    );
    let over = change("/b", FileOp::Write("x".repeat(11)), Some("e:1"));
    assert_eq!(
        store.change_file(&over).await.unwrap(),
        FileChangeOutcome::OverQuota {
            used: 10,
            needed: 21,
            quota: 20
        }
    );
    let append = change("/a", FileOp::Append("xyz".into()), Some("e:2"));
    assert_eq!(
        store.change_file(&append).await.unwrap(),
        FileChangeOutcome::FileTooLarge {
            size: 13,
            limit: 12
        }
    );
    assert_eq!(text(store, "/a").await.as_deref(), Some("0123456789"));
    assert_eq!(text(store, "/b").await, None);
    for key in ["e:0", "e:1", "e:2"] {
        assert!(
            !store.revert_file_change("w", key, 2_000).await.unwrap(),
            "{key} left an undo record"
        );
    }
    let fits = change("/b", FileOp::Write("x".repeat(10)), None);
    assert_eq!(
        store.change_file(&fits).await.unwrap(),
        applied(Some(10), false, 20, false)
    );
}

/// Reverting keyed changes newest first puts back the content before each (removing a file
/// that did not exist); a revert happens once.
pub async fn reverting_file_changes_restores_what_was_there(store: &dyn FileStore) {
    store
        .change_file(&change("/a", FileOp::Write("old".into()), None))
        .await
        .unwrap();
    store
        .change_file(&change("/gone", FileOp::Write("here".into()), None))
        .await
        .unwrap();
    for (i, (path, op)) in [
        ("/a", FileOp::Write("new".into())),
        ("/a", FileOp::Append("!".into())),
        ("/fresh", FileOp::Write("f".into())),
        ("/gone", FileOp::Remove),
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("e:{i}");
        store
            .change_file(&change(path, op, Some(&key)))
            .await
            .unwrap();
    }
    assert!(store.revert_file_change("w", "e:3", 2_000).await.unwrap());
    assert!(store.revert_file_change("w", "e:2", 2_000).await.unwrap());
    assert!(store.revert_file_change("w", "e:1", 2_000).await.unwrap());
    assert_eq!(text(store, "/a").await.as_deref(), Some("new"));
    assert!(store.revert_file_change("w", "e:0", 2_000).await.unwrap());
    assert!(
        !store.revert_file_change("w", "e:0", 2_000).await.unwrap(),
        "reverted twice"
    );
    assert!(!store.revert_file_change("w", "nope", 2_000).await.unwrap());
    assert_eq!(text(store, "/a").await.as_deref(), Some("old"));
    assert_eq!(text(store, "/fresh").await, None);
    assert_eq!(text(store, "/gone").await.as_deref(), Some("here"));
}

/// Files list by raw prefix in byte order; workspaces keep separate files and usage.
pub async fn files_list_by_prefix_and_workspaces_stay_apart(store: &dyn FileStore) {
    for path in ["/d/b", "/d/a", "/d%/x", "/d/B", "/dd", "/e"] {
        store
            .change_file(&change(path, FileOp::Write("12".into()), None))
            .await
            .unwrap();
    }
    let other = FileChange {
        workspace: "v".into(),
        ..change("/d/z", FileOp::Write("1".into()), None)
    };
    store.change_file(&other).await.unwrap();
    let listed: Vec<String> = store
        .list_files("w", "/d/")
        .await
        .unwrap()
        .into_iter()
        .map(|f: FileInfo| f.path)
        .collect();
    assert_eq!(
        listed,
        ["/d/B", "/d/a", "/d/b"],
        "a prefix is raw text, not a pattern"
    );
    assert_eq!(store.list_files("w", "/").await.unwrap().len(), 6);
    assert_eq!(store.read_file("v", "/d/b").await.unwrap(), None);
    assert_eq!(
        store.workspaces().await.unwrap(),
        vec![
            WorkspaceUsage {
                name: "v".into(),
                files: 1,
                bytes: 1
            },
            WorkspaceUsage {
                name: "w".into(),
                files: 6,
                bytes: 12
            },
        ]
    );
}

/// Deleting an execution, pruning it, and the prune of an insert each drop the undo records
/// of the file changes its calls made (keys `execution:seq`), and only theirs: the files
/// stay as they are, and an execution whose id merely starts the same keeps its records.
pub async fn deleting_or_pruning_an_execution_drops_its_file_undo_records(
    store: &dyn StoreWithFiles,
) {
    for (at, id) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
        insert(store, RT, id, at, "n", FAR).await;
        move_through(store, RT, id, &[ExecutionStatus::Completed], at).await;
    }
    for (key, path) in [
        ("a:0", "/a"),
        ("a:1", "/a"),
        ("ab:0", "/ab"),
        ("b:0", "/b"),
        ("c:0", "/c"),
        ("d:0", "/d"),
    ] {
        let write = change(path, FileOp::Append("x".into()), Some(key));
        store.change_file(&write).await.unwrap();
    }
    let undo = |key: &'static str| store.revert_file_change("w", key, 2_000);

    let deleted = store.delete_execution(RT, "b", 10).await.unwrap();
    assert_eq!(deleted, Deletion::Deleted(ExecutionStatus::Completed));
    assert!(!undo("b:0").await.unwrap(), "b's undo record outlived b");
    assert_eq!(
        store.prune_executions(RT, 2).await.unwrap(),
        1,
        "a is pruned"
    );
    assert!(
        !undo("a:0").await.unwrap(),
        "a's undo record outlived its prune"
    );
    assert!(
        !undo("a:1").await.unwrap(),
        "a's second undo record outlived it"
    );
    let pruned = store
        .insert_execution(RT, &execution("e", 5), &lease("n", FAR), 1)
        .await
        .unwrap();
    assert_eq!(pruned, 1, "the insert prunes c");
    assert!(
        !undo("c:0").await.unwrap(),
        "c's undo record outlived the insert's prune"
    );

    assert_eq!(
        text(store, "/a").await.as_deref(),
        Some("xx"),
        "a file stays"
    );
    assert_eq!(
        text(store, "/b").await.as_deref(),
        Some("x"),
        "a file stays"
    );
    assert!(undo("d:0").await.unwrap(), "d is kept, and so is its undo");
    assert!(
        undo("ab:0").await.unwrap(),
        "ab is not a, nor an execution of a"
    );
    assert_eq!(text(store, "/d").await, None);
}

/// The bytes workspace `w` holds (files and undo records), as a change that writes nothing
/// reports them.
async fn used(store: &dyn FileStore) -> u64 {
    let nothing = change("/nothing", FileOp::Remove, None);
    match store.change_file(&nothing).await.unwrap() {
        FileChangeOutcome::Applied { used_bytes, .. } => used_bytes,
        other => panic!("removing a missing file was refused: {other:?}"),
    }
}

/// The quota stops counting an execution's undo records once the execution is deleted or
/// pruned: what they kept is freed for new writes, and the files stay as they are.
pub async fn deleting_or_pruning_an_execution_frees_the_quota_its_undo_records_held(
    store: &dyn StoreWithFiles,
) {
    for (at, id) in [(1, "p"), (2, "q")] {
        insert(store, RT, id, at, "n", FAR).await;
        move_through(store, RT, id, &[ExecutionStatus::Completed], at).await;
    }
    let first = change("/f", FileOp::Write("0123456789".into()), None);
    store.change_file(&first).await.unwrap();
    let by_p = change("/f", FileOp::Write("abcde".into()), Some("p:0"));
    store.change_file(&by_p).await.unwrap();
    let by_q = change("/f", FileOp::Write("fghij".into()), Some("q:0"));
    assert_eq!(
        store.change_file(&by_q).await.unwrap(),
        applied(Some(5), true, 20, false),
        "5 bytes of file, and the 10 and 5 bytes p and q kept"
    );
    let more = change("/g", FileOp::Write("x".into()), None);
    assert_eq!(
        store.change_file(&more).await.unwrap(),
        FileChangeOutcome::OverQuota {
            used: 20,
            needed: 21,
            quota: 20
        }
    );

    let deleted = store.delete_execution(RT, "q", 10).await.unwrap();
    assert_eq!(deleted, Deletion::Deleted(ExecutionStatus::Completed));
    assert_eq!(used(store).await, 15, "q's 5 kept bytes outlived q");
    assert_eq!(
        store.prune_executions(RT, 0).await.unwrap(),
        1,
        "p is pruned"
    );
    assert_eq!(used(store).await, 5, "p's 10 kept bytes outlived its prune");
    assert_eq!(
        store.change_file(&more).await.unwrap(),
        applied(Some(1), false, 6, false),
        "the freed bytes take new writes"
    );
    assert_eq!(
        text(store, "/f").await.as_deref(),
        Some("fghij"),
        "a file stays"
    );
}
