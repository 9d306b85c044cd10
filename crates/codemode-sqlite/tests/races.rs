//! Compare-and-set races between two connections (two stores) on one file.

mod common;

use codemode::{Commit, ExecutionStatus, Store, Transition};
use common::{available, execution, lease, store, RT};

#[test]
fn claims_race_across_two_connections_and_exactly_one_wins_each() {
    let (_d, path, s) = store();
    const RUNS: usize = 40;
    let setup = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    setup.block_on(async {
        for i in 0..RUNS {
            let id = format!("e{i}");
            s.insert_execution(RT, &execution(&id, 1), &lease("n1", 100), 1_000)
                .await
                .unwrap();
            let pause = Commit {
                execution_id: id,
                owner: Some("n1".into()),
                entries: vec![],
                transition: Some(Transition::new(
                    ExecutionStatus::Running,
                    ExecutionStatus::Paused,
                    5,
                )),
                clock: None,
            };
            assert!(s.commit(RT, &pause).await.unwrap());
        }
    });
    let wins: Vec<usize> = std::thread::scope(|scope| {
        let racers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|node| {
                let path = path.clone();
                scope.spawn(move || {
                    let store = codemode_sqlite::SqliteStore::open(&path).unwrap();
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    rt.block_on(async {
                        let mut won = 0;
                        for i in 0..RUNS {
                            let l = lease(node, 1_000);
                            if store
                                .claim(
                                    RT,
                                    &format!("e{i}"),
                                    ExecutionStatus::Paused,
                                    &l,
                                    10,
                                    &available(),
                                )
                                .await
                                .unwrap()
                                .is_won()
                            {
                                won += 1;
                            }
                        }
                        won
                    })
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(wins.iter().sum::<usize>(), RUNS, "{wins:?}");
}
