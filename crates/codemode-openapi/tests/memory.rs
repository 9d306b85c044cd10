//! Memory of a runtime with GitHub's description (13 MB, 1,223 operations) configured as an
//! OpenAPI connector: the resident set (VmRSS of /proc/self/status) after loading, after
//! building the runtime, and after a describe and a search, printed at each stage. The bound
//! (200 MB) is asserted only in an optimised build (`cargo test --release`, or the
//! `github_spec` bench); a debug build keeps more and only prints. Alone in its binary so no
//! other test's memory is counted.

mod support;

use codemode::{Outcome, Runtime};
use codemode_openapi::{OpenApiConfig, OpenApiConnector};
use std::sync::Arc;

/// The bound on the resident set, in MB, in an optimised build.
const MAX_RSS_MB: u64 = 200;

fn rss_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_runtime_resident_set() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let path = dir.join("@octokit/openapi/generated/api.github.com.json");
    let start = rss_mb();
    let connector =
        OpenApiConnector::from_spec(OpenApiConfig::new("github", path.to_str().unwrap()))
            .await
            .unwrap();
    let loaded = rss_mb();
    let tmp = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(tmp.path().join("c.db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let runtime = Runtime::builder(Arc::new(store), Arc::new(executor))
        .connector(connector)
        .build()
        .unwrap();
    let built = rss_mb();
    let code = "const d = await codemode.describe('github'); \
                const m = await codemode.describe('github.repos_get'); \
                const s = await codemode.search('list issues of a repository'); \
                return [d.types.length, m.types.length, s.results.length];";
    let outcome = runtime.call(code).await.unwrap();
    let Outcome::Completed { result, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(result[0].as_u64().unwrap() > 0 && result[2].as_u64().unwrap() > 0);
    let used = rss_mb();
    let optimised = !cfg!(debug_assertions);
    eprintln!(
        "github runtime RSS ({}): start {start} MB, connector loaded {loaded} MB, runtime built \
         {built} MB, after describe + search {used} MB",
        if optimised {
            "optimised"
        } else {
            "debug build"
        }
    );
    if optimised {
        assert!(used <= MAX_RSS_MB, "{used} MB > {MAX_RSS_MB} MB");
    }
}
