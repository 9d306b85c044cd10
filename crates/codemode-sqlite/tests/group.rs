//! Group commit: writes waiting together share one transaction, and a write that fails or
//! is refused takes nothing of the others' with it.

mod common;

use codemode::{Commit, ExecutionStatus, Store, Transition};
use common::{entry, execution, lease, store, RT};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const FAR: i64 = i64::MAX / 2;

fn finish(id: &str, owner: &str) -> Commit {
    Commit {
        execution_id: id.to_string(),
        owner: Some(owner.to_string()),
        entries: vec![entry(0, codemode::EntryState::Applied)],
        transition: Some(Transition::new(
            ExecutionStatus::Running,
            ExecutionStatus::Completed,
            9,
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_batch_is_rolled_back_alone_and_gets_its_own_error() {
    let (_dir, _path, s) = store();
    let s = Arc::new(s);
    s.insert_execution(RT, &execution("taken", 1), &lease("n", FAR), 1_000)
        .await
        .unwrap();
    s.insert_execution(RT, &execution("other-owner", 1), &lease("n", FAR), 1_000)
        .await
        .unwrap();

    // Hold the writer's connection so that every write below waits, then joins one batch.
    let (held, release) = (mpsc::channel::<()>(), mpsc::channel::<()>());
    let holder = {
        let s = s.clone();
        let (held, release) = (held.0, release.1);
        std::thread::spawn(move || {
            s.with_connection(|_| {
                held.send(()).unwrap();
                release.recv().unwrap();
            })
        })
    };
    held.1.recv().unwrap();

    let mut writes = Vec::new();
    for i in 0..10 {
        let s = s.clone();
        writes.push(tokio::spawn(async move {
            let id = format!("new-{i}");
            s.insert_execution(RT, &execution(&id, 2), &lease("n", FAR), 1_000)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }));
    }
    let duplicate = {
        let s = s.clone();
        tokio::spawn(async move {
            s.insert_execution(RT, &execution("taken", 3), &lease("n", FAR), 1_000)
                .await
        })
    };
    let refused = {
        let s = s.clone();
        tokio::spawn(async move { s.commit(RT, &finish("other-owner", "intruder")).await })
    };
    let done = {
        let s = s.clone();
        tokio::spawn(async move { s.commit(RT, &finish("taken", "n")).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    release.0.send(()).unwrap();
    holder.join().unwrap();

    for w in writes {
        w.await.unwrap().unwrap();
    }
    let err = duplicate.await.unwrap().unwrap_err().to_string();
    assert!(err.contains("already exists"), "{err}");
    assert!(!refused.await.unwrap().unwrap(), "a CAS on another's lease");
    assert!(done.await.unwrap().unwrap());

    // Read after the writes returned: every write that succeeded is there, nothing else.
    for i in 0..10 {
        assert!(s
            .execution(RT, &format!("new-{i}"))
            .await
            .unwrap()
            .is_some());
    }
    let taken = s.execution(RT, "taken").await.unwrap().unwrap();
    assert_eq!(taken.status, ExecutionStatus::Completed);
    assert_eq!(taken.created_at, 1, "the duplicate insert changed nothing");
    let other = s.execution(RT, "other-owner").await.unwrap().unwrap();
    assert_eq!(other.status, ExecutionStatus::Running);
    assert!(other.log.is_empty(), "the refused commit wrote no entry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_all_land_and_are_read_back_at_once() {
    let (_dir, _path, s) = store();
    let s = Arc::new(s);
    const TASKS: usize = 32;
    const COMMITS: u64 = 20;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("e{t}");
            s.insert_execution(RT, &execution(&id, 1), &lease("n", FAR), 1_000)
                .await
                .unwrap();
            for seq in 0..COMMITS {
                let c = Commit {
                    execution_id: id.clone(),
                    owner: Some("n".into()),
                    entries: vec![entry(seq, codemode::EntryState::Applied)],
                    transition: None,
                };
                assert!(s.commit(RT, &c).await.unwrap());
                // Read-your-writes: a read sent after the commit returned sees it.
                let e = s.execution(RT, &id).await.unwrap().unwrap();
                assert_eq!(e.log.len() as u64, seq + 1);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = s.executions(RT, None, None).await.unwrap();
    assert_eq!(all.len(), TASKS);
    assert!(all.iter().all(|e| e.log.len() as u64 == COMMITS));
}

#[test]
fn a_store_works_without_a_tokio_runtime() {
    let (_dir, _path, s) = store();
    futures_lite_block_on(s.insert_execution(RT, &execution("plain", 1), &lease("n", FAR), 50))
        .unwrap();
    let found = futures_lite_block_on(s.execution(RT, "plain")).unwrap();
    assert!(found.is_some());
}

/// A minimal executor: the store's replies need no reactor, only a waker.
fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
