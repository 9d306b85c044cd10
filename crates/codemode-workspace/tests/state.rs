//! The `state` connector through a real runtime and sandbox, on SQLite and on PostgreSQL.

use codemode::{
    EntryState, FileOp, Outcome, Runtime, RustConnector, RustTool, StoreWithFiles, ToolError,
};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use codemode_quickjs::QuickJsExecutor;
use codemode_sqlite::SqliteStore;
use codemode_workspace::{Workspace, WorkspaceOptions};
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Runs `case` on a fresh SQLite file, then on a scratch PostgreSQL database (when a server
/// answers).
async fn on_both_stores<F, Fut>(name: &str, case: F)
where
    F: Fn(Arc<dyn StoreWithFiles>) -> Fut,
    Fut: Future<Output = ()>,
{
    on_both_stores_keeping_writes_for(name, codemode::DEFAULT_RETENTION_MIN_AGE, case).await;
}

/// [`on_both_stores`] with stores whose pruning keeps a run holding an applied write for
/// `min_age` (a write to `state` needs no approval, and is kept for its rollback).
async fn on_both_stores_keeping_writes_for<F, Fut>(name: &str, min_age: Duration, case: F)
where
    F: Fn(Arc<dyn StoreWithFiles>) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("ws.db"))
        .unwrap()
        .with_retention_min_age(min_age);
    case(Arc::new(sqlite)).await;
    if let Some(db) = ScratchDatabase::for_tests(name).await.unwrap() {
        let pg = PostgresStore::connect(db.url())
            .await
            .unwrap()
            .with_retention_min_age(min_age);
        case(Arc::new(pg.clone())).await;
        pg.close();
    }
}

fn workspace(store: &Arc<dyn StoreWithFiles>, options: WorkspaceOptions) -> Workspace {
    Workspace::new(store.clone(), options).unwrap()
}

/// A runtime with `state` over `ws` and `mail.send`, which requires approval.
fn runtime(store: &Arc<dyn StoreWithFiles>, ws: &Workspace) -> Runtime {
    let mail = RustConnector::new("mail")
        .tool(RustTool::new("send", |_args: Value, _ctx| async move {
            Ok::<_, ToolError>(json!("sent"))
        }));
    Runtime::builder(store.clone(), Arc::new(QuickJsExecutor::default()))
        .name("ws-test")
        .connector(ws.connector())
        .connector(mail)
        .build()
        .unwrap()
}

fn completed(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Completed { result, .. } => result,
        other => panic!("expected completed, got {other:?}"),
    }
}

async fn content(ws: &Workspace, path: &str) -> Option<String> {
    ws.read(path).await.unwrap().map(|f| f.content)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_written_read_appended_listed_globbed_statted_and_removed() {
    on_both_stores("files_round_trip", |store| async move {
        let ws = workspace(&store, WorkspaceOptions::default());
        let rt = runtime(&store, &ws);
        let code = r#"async () => {
            const w = await state.writeFile("/notes/a.txt", "héllo");
            await state.appendFile("notes//a.txt", " world");
            await state.writeJson("/data/rows.json", [{ id: 1 }, { id: 2 }]);
            await state.writeFile("/data/deep/x.json", "{}");
            const text = await state.readFile("/notes/a.txt");
            const rows = await state.readJson("/data/rows.json");
            const root = await state.list("/");
            const data = await state.list("/data");
            const json = await state.glob("/data/**/*.json");
            const shallow = await state.glob("/data/*.json");
            const file = await state.stat("/notes/a.txt");
            const dir = await state.stat("/data");
            const removed = await state.remove("/data/rows.json");
            const gone = await state.stat("/data/rows.json");
            let missing;
            try { await state.readFile("/data/rows.json"); } catch (e) { missing = e.message; }
            return { w, text, rows, root: root.entries.map(e => [e.name, e.type]),
                     data: data.entries.map(e => e.path), json: json.entries, shallow: shallow.entries,
                     file: [file.type, file.size], dir: [dir.type, dir.size], removed, gone, missing };
        }"#;
        let r = completed(rt.call(code).await.unwrap());
        assert_eq!(r["w"], json!({"path": "/notes/a.txt", "bytes": 6, "existed": false}));
        assert_eq!(r["text"], "héllo world");
        assert_eq!(r["rows"], json!([{"id": 1}, {"id": 2}]));
        assert_eq!(r["root"], json!([["data", "directory"], ["notes", "directory"]]));
        assert_eq!(r["data"], json!(["/data/deep", "/data/rows.json"]));
        assert_eq!(r["json"], json!(["/data/deep/x.json", "/data/rows.json"]));
        assert_eq!(r["shallow"], json!(["/data/rows.json"]));
        assert_eq!(r["file"], json!(["file", 12]));
        assert_eq!(r["dir"], json!(["directory", 2 + r#"[{"id":1},{"id":2}]"#.len()]));
        assert_eq!(r["removed"], json!({"path": "/data/rows.json", "bytes": 0, "existed": true}));
        assert_eq!(r["gone"], Value::Null);
        let missing = r["missing"].as_str().unwrap();
        assert!(missing.contains("no file /data/rows.json") && missing.contains("state.list(\"/data\")"), "{missing}");
        // The server's view: the same files, read directly.
        assert_eq!(content(&ws, "/notes/a.txt").await.as_deref(), Some("héllo world"));
        assert_eq!(content(&ws, "/data/rows.json").await, None);
        let usage = store.workspaces().await.unwrap();
        assert_eq!((usage[0].name.as_str(), usage[0].files, usage[0].bytes), ("default", 2, 14));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_run_replays_its_workspace_write_without_repeating_it() {
    on_both_stores("replay_write", |store| async move {
        let ws = workspace(&store, WorkspaceOptions::default());
        let rt = runtime(&store, &ws);
        let code = r#"async () => {
            await state.appendFile("/log.txt", "a\n");
            await mail.send({ to: "ops" });
            await state.appendFile("/log.txt", "b\n");
            return await state.readFile("/log.txt");
        }"#;
        let id = match rt.call(code).await.unwrap() {
            Outcome::Paused { execution_id, .. } => execution_id,
            other => panic!("expected a pause, got {other:?}"),
        };
        assert_eq!(content(&ws, "/log.txt").await.as_deref(), Some("a\n"));
        let record = store.execution("ws-test", &id).await.unwrap().unwrap();
        assert_eq!(record.log[0].state, EntryState::Applied);
        assert!(!record.log[0].requires_approval);
        assert_eq!(completed(rt.approve(&id).await.unwrap()), json!("a\nb\n"));
        assert_eq!(content(&ws, "/log.txt").await.as_deref(), Some("a\nb\n"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_puts_every_file_back_as_it_was() {
    on_both_stores("rollback_files", |store| async move {
        let ws = workspace(&store, WorkspaceOptions::default());
        ws.change("/keep.txt", FileOp::Write("old".into()), None)
            .await
            .unwrap();
        ws.change("/gone.txt", FileOp::Write("was here".into()), None)
            .await
            .unwrap();
        let rt = runtime(&store, &ws);
        let code = r#"async () => {
            await state.writeFile("/keep.txt", "new");
            await state.appendFile("/keep.txt", "!");
            await state.writeJson("/fresh.json", { n: 1 });
            await state.remove("/gone.txt");
            return await state.readFile("/keep.txt");
        }"#;
        let outcome = rt.call(code).await.unwrap();
        let id = outcome.execution_id().to_string();
        assert_eq!(completed(outcome), json!("new!"));
        let report = rt.rollback(&id).await.unwrap();
        assert_eq!(report.reverted, vec![3, 2, 1, 0]);
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        assert_eq!(content(&ws, "/keep.txt").await.as_deref(), Some("old"));
        assert_eq!(content(&ws, "/fresh.json").await, None);
        assert_eq!(content(&ws, "/gone.txt").await.as_deref(), Some("was here"));
        // A second revert of the same change finds nothing to undo.
        assert!(!ws.revert(&format!("{id}:0")).await.unwrap());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_or_pruning_an_execution_drops_the_undo_records_of_its_writes() {
    // No minimum age: otherwise the prune keeps these young runs for their rollback.
    on_both_stores_keeping_writes_for("undo_pruned", Duration::ZERO, |store| async move {
        let ws = workspace(&store, WorkspaceOptions::default());
        let rt = runtime(&store, &ws);
        let mut ids = Vec::new();
        for name in ["deleted", "kept", "pruned"] {
            let code = format!("async () => state.writeFile('/{name}.txt', '{name}')");
            let outcome = rt.call(&code).await.unwrap();
            ids.push(outcome.execution_id().to_string());
            completed(outcome);
        }
        let undo = |i: usize| format!("{}:0", ids[i]);
        assert!(rt.delete_execution(&ids[0]).await.unwrap());
        assert!(
            !ws.revert(&undo(0)).await.unwrap(),
            "undo outlived its delete"
        );
        assert_eq!(
            content(&ws, "/deleted.txt").await.as_deref(),
            Some("deleted")
        );
        // The kept execution's undo is there (and reverting it removes its new file).
        assert!(ws.revert(&undo(1)).await.unwrap());
        assert_eq!(content(&ws, "/kept.txt").await, None);
        assert_eq!(rt.prune_executions(0).await.unwrap(), 2);
        assert!(
            !ws.revert(&undo(2)).await.unwrap(),
            "undo outlived its prune"
        );
        assert_eq!(content(&ws, "/pruned.txt").await.as_deref(), Some("pruned"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_over_quota_or_size_limit_is_refused_and_changes_nothing() {
    on_both_stores("quota", |store| async move {
        let options = WorkspaceOptions {
            quota_bytes: 10,
            max_file_bytes: 8,
            ..WorkspaceOptions::default()
        };
        let ws = workspace(&store, options);
        let rt = runtime(&store, &ws);
        let code = r#"async () => {
            await state.writeFile("/a.txt", "12345");
            const errors = [];
            for (const [path, content] of [["/a.txt", "123456789"], ["/b.txt", "123456"]]) {
                try { await state.writeFile(path, content); } catch (e) { errors.push(e.message); }
            }
            try { await state.appendFile("/a.txt", "6789"); } catch (e) { errors.push(e.message); }
            try { await state.readFile("/a/../b"); } catch (e) { errors.push(e.message); }
            return errors;
        }"#;
        let errors = completed(rt.call(code).await.unwrap());
        let errors: Vec<&str> = errors
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].contains("over the limit of 8 bytes per file")
                && errors[0].contains("nothing was written"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].contains("over its quota of 10 bytes (5 used now)")
                && errors[1].contains("state.remove"),
            "{}",
            errors[1]
        );
        assert!(
            errors[2].contains("over the limit of 8 bytes"),
            "{}",
            errors[2]
        );
        assert!(errors[3].contains("`..` is not allowed"), "{}", errors[3]);
        assert_eq!(content(&ws, "/a.txt").await.as_deref(), Some("12345"));
        assert_eq!(content(&ws, "/b.txt").await, None);
        // Shrinking a file is always allowed, even at the quota.
        ws.change("/a.txt", FileOp::Write("1".into()), None)
            .await
            .unwrap();
        assert_eq!(content(&ws, "/a.txt").await.as_deref(), Some("1"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glob_matching_everything_is_bounded_and_says_how_many_matched() {
    on_both_stores("glob_bound", |store| async move {
        let options = WorkspaceOptions {
            max_entries: 3,
            ..WorkspaceOptions::default()
        };
        let ws = workspace(&store, options);
        for i in 0..5 {
            ws.change(&format!("/r/{i}.json"), FileOp::Write("{}".into()), None)
                .await
                .unwrap();
        }
        let all = ws.glob("/**").await.unwrap();
        assert_eq!(all.entries, vec!["/r/0.json", "/r/1.json", "/r/2.json"]);
        assert_eq!((all.total, all.truncated), (5, true));
        assert!(all.note.unwrap().contains("first 3 of 5 matches"));
        let path = ws
            .save_value("exec 1:7", &json!({"big": [1, 2]}))
            .await
            .unwrap();
        assert_eq!(path, "/results/exec-1-7.json");
        assert_eq!(ws.read_json(&path).await.unwrap(), json!({"big": [1, 2]}));
    })
    .await;
}

/// Bytes the SQLite store's files hold (the database and its WAL).
fn sqlite_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().metadata().unwrap().len())
        .sum()
}

/// The undo record each keyed change keeps (the file's previous content) counts against the
/// quota: one-byte appends to a 7.6 MiB file stop at the quota with an error naming it and
/// saying how to free space, the store does not grow by hundreds of MiB, and a rollback
/// still restores the file exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_records_count_against_the_quota_and_rollback_still_restores() {
    // Letters from a small generator, so that PostgreSQL cannot compress them away.
    let mut x: u32 = 7;
    let original: String = (0..7_600_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect();
    let run = |store: Arc<dyn StoreWithFiles>, dir: Option<std::path::PathBuf>| {
        let original = original.clone();
        async move {
            let ws = workspace(&store, WorkspaceOptions::default());
            ws.change("/big.txt", FileOp::Write(original.clone()), None)
                .await
                .unwrap();
            let before = dir.as_deref().map_or(0, sqlite_bytes);
            let rt = runtime(&store, &ws);
            let code = r#"async () => {
                let ok = 0; const errors = [];
                for (let i = 0; i < 60; i++) {
                    try { await state.appendFile("/big.txt", "x"); ok++; }
                    catch (e) { errors.push(e.message); }
                }
                return { ok, errors };
            }"#;
            let started = std::time::Instant::now();
            let outcome = rt.call(code).await.unwrap();
            let took = started.elapsed();
            let id = outcome.execution_id().to_string();
            let result = completed(outcome);
            let ok = result["ok"].as_u64().unwrap();
            let errors = result["errors"].as_array().unwrap();
            let grown = dir
                .as_deref()
                .map_or(0, sqlite_bytes)
                .saturating_sub(before);
            println!(
                "{}: 60 one-byte appends to a 7.6 MB file in {:.1} s: {ok} applied, {} refused; \
                 store files grew {:.0} MiB (SQLite only)",
                if dir.is_some() { "sqlite" } else { "postgres" },
                took.as_secs_f64(),
                errors.len(),
                grown as f64 / 1048576.0
            );
            // 64 MiB holds the file and seven kept copies of it, not eight.
            assert_eq!(ok, 7, "{result}");
            let first = errors[0].as_str().unwrap();
            assert!(
                first.contains("over its quota of 67108864 bytes")
                    && first.contains("state.remove")
                    && first.contains("previous content")
                    && first.contains("codemode prune"),
                "{first}"
            );
            let file = content(&ws, "/big.txt").await.unwrap();
            assert_eq!(file.len(), original.len() + 7);
            if dir.is_some() {
                assert!(grown < 200 * 1048576, "the store grew {grown} bytes");
            }
            let report = rt.rollback(&id).await.unwrap();
            assert_eq!(report.reverted.len(), 7, "{report:?}");
            assert!(
                content(&ws, "/big.txt").await.unwrap() == original,
                "the rollback restored the file exactly"
            );
            // The rollback freed the kept copies: appends fit again.
            ws.change(
                "/big.txt",
                FileOp::Append("y".into()),
                Some("free:0".into()),
            )
            .await
            .unwrap();
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("ws.db")).unwrap();
    run(Arc::new(sqlite), Some(dir.path().to_path_buf())).await;
    if let Some(db) = ScratchDatabase::for_tests("undo_quota").await.unwrap() {
        let pg = PostgresStore::connect(db.url()).await.unwrap();
        run(Arc::new(pg.clone()), None).await;
        pg.close();
    }
}
