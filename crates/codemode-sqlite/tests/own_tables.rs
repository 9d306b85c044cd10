//! Tables of the caller's own in the store's file, reached through `with_connection`.

mod common;

use codemode::Store;
use common::{execution, lease, store, RT};
use std::sync::Arc;

const FAR: i64 = i64::MAX / 2;

#[tokio::test]
async fn own_tables_share_the_file_and_a_left_open_transaction_is_rolled_back() {
    let (_dir, path, s) = store();
    s.with_connection(|c| {
        c.execute_batch("CREATE TABLE mine (v TEXT); INSERT INTO mine VALUES ('kept');")
    })
    .unwrap();
    // A transaction left open would make the store's next `BEGIN` fail.
    s.with_connection(|c| c.execute_batch("BEGIN; INSERT INTO mine VALUES ('dropped');"))
        .unwrap();
    s.insert_execution(RT, &execution("after", 1), &lease("n", FAR), 50)
        .await
        .expect("the store still writes after a caller left a transaction open");
    let other = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<String> = other
        .prepare("SELECT v FROM mine")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, ["kept"]);
    assert!(s.execution(RT, "after").await.unwrap().is_some());
}

#[tokio::test]
async fn a_panic_inside_with_connection_leaves_the_store_usable() {
    let (_dir, _path, s) = store();
    let s = Arc::new(s);
    let inner = s.clone();
    let panicked = std::thread::spawn(move || {
        inner.with_connection(|c| {
            c.execute_batch("BEGIN; CREATE TABLE half (v INTEGER);")
                .unwrap();
            panic!("a caller's bug");
        })
    })
    .join();
    assert!(panicked.is_err());
    s.insert_execution(RT, &execution("after", 1), &lease("n", FAR), 50)
        .await
        .expect("the poisoned lock is recovered and the open transaction rolled back");
    let half: i64 = s.with_connection(|c| {
        c.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'half'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    });
    assert_eq!(
        half, 0,
        "the panicking caller's transaction was rolled back"
    );
}
