//! Every case of the store contracts (executions, files, and both together) against the
//! SQLite store, each on a fresh file.

use codemode_conformance::store_contract;
use codemode_sqlite::SqliteStore;

macro_rules! on_sqlite {
    ($($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let dir = tempfile::tempdir().expect("a temp dir");
                let store = SqliteStore::open(dir.path().join("codemode.db")).expect("open");
                store_contract::$case(&store).await;
            }
        )*
    };
}

codemode_conformance::for_each_store_contract_case!(on_sqlite);
codemode_conformance::for_each_file_store_contract_case!(on_sqlite);
codemode_conformance::for_each_store_with_files_contract_case!(on_sqlite);
