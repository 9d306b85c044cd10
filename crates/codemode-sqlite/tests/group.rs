//! Group commit: concurrent writes all land and read back at once, with or without a tokio
//! runtime. (A write that fails or is refused in a shared batch: `src/tests.rs`.)

mod common;

use codemode::{Commit, Store};
use common::{entry, execution, lease, store, RT};
use std::sync::Arc;

const FAR: i64 = i64::MAX / 2;

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
                    clock: None,
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
