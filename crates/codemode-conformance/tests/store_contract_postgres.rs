//! Every case of the store contracts (executions, files, and both together) against the
//! PostgreSQL store, each on a scratch database of its own.
//!
//! Without a server (and without `CI`) each test prints a loud SKIPPED line; with `CI` set
//! an unreachable server fails it.

use codemode_conformance::store_contract;
use codemode_postgres::{PostgresStore, ScratchDatabase};

macro_rules! on_postgres {
    ($($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let Some(db) = ScratchDatabase::for_tests(stringify!($case))
                    .await
                    .expect("the PostgreSQL test server")
                else {
                    return;
                };
                let store = PostgresStore::connect(db.url()).await.expect("connect");
                store_contract::$case(&store).await;
                store.close();
            }
        )*
    };
}

codemode_conformance::for_each_store_contract_case!(on_postgres);
codemode_conformance::for_each_file_store_contract_case!(on_postgres);
codemode_conformance::for_each_store_with_files_contract_case!(on_postgres);
