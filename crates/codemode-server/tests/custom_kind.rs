//! A connector kind of a host's own plugs in with one registration line: it is defined here,
//! outside the shipped crates, registered beside the built-in kinds, configured in a
//! `codemode.toml` text, started by the registry with what the host provides, and called by
//! model code. The registry refuses a second kind of one name, lists the kinds when a `type`
//! is unknown, checks the secrets a kind names and keeps their values out of its errors.

use async_trait::async_trait;
use codemode::kind::{
    BoxError, ConnectorKind, ConnectorKinds, ConnectorSettings, HostResources, KindError,
    SecretRef, Started,
};
use codemode::{Outcome, Runtime, RustConnector, RustTool};
use codemode_server::config::{builtin_kinds, Config};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `type = "counter"`: `add({ by })` adds to a count the host holds, `get()` reads it.
struct CounterKind;

/// The counter's own keys.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterConfig {
    /// Where the count starts.
    start: i64,
    /// The variable holding the token the counter is opened with, if it needs one.
    #[serde(default)]
    token_env: Option<String>,
}

/// Provided by the host: the count every counter adds to.
#[derive(Clone, Default)]
struct Count(Arc<AtomicI64>);

#[async_trait]
impl ConnectorKind for CounterKind {
    type Config = CounterConfig;

    fn name(&self) -> &str {
        "counter"
    }

    fn default_timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(5))
    }

    fn secrets(&self, config: &CounterConfig) -> Vec<SecretRef> {
        config
            .token_env
            .iter()
            .map(|var| SecretRef::new("token_env", var))
            .collect()
    }

    async fn start(
        &self,
        config: &CounterConfig,
        settings: &ConnectorSettings,
        host: &HostResources,
    ) -> Result<Started, BoxError> {
        let count = host.require::<Count>("the count counters add to")?.clone();
        if let Some(var) = &config.token_env {
            let token = std::env::var(var)?;
            if token.starts_with("bad") {
                return Err(format!("the counter service refused the token {token}").into());
            }
        }
        count.0.store(config.start, Ordering::SeqCst);
        let (adds, reads) = (count.clone(), count);
        let add = RustTool::new("add", move |args: Value, _ctx| {
            let count = adds.clone();
            async move {
                let by = args["by"].as_i64().unwrap_or(1);
                Ok(json!(count.0.fetch_add(by, Ordering::SeqCst) + by))
            }
        })
        .requires_approval(false);
        let get = RustTool::new("get", move |_args: Value, _ctx| {
            let count = reads.clone();
            async move { Ok(json!(count.0.load(Ordering::SeqCst))) }
        })
        .read_only();
        Ok(Started::new(
            RustConnector::new(&settings.name).tool(add).tool(get),
        ))
    }
}

/// The host's registry: the built-in kinds and the counter, registered with one line.
fn kinds() -> ConnectorKinds {
    builtin_kinds().unwrap().with(CounterKind).unwrap()
}

/// A runtime on a fresh store with the connectors of `toml` started, and what failed.
async fn started(
    toml: &str,
    host: HostResources,
) -> (Runtime, Vec<(String, String)>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db")).unwrap());
    let files: Arc<dyn codemode::FileStore> = store.clone();
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    let kinds = kinds();
    let config = Config::parse_with(toml, "codemode.toml", &kinds).unwrap();
    let host = host.with(files);
    let builder = Runtime::builder(store, executor);
    let connectors = config.connectors_to_start().unwrap();
    let started = codemode_server::start_connectors(&kinds, &connectors, &host, builder).await;
    (started.builder.build().unwrap(), started.failed, dir)
}

const COUNTER: &str = "[connectors.counter]\ntype = \"counter\"\nstart = 10\nhint = \"counts things\"\nmax_in_flight = 2\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_of_the_hosts_own_is_configured_started_and_called() {
    let count = Count::default();
    let (runtime, failed, _dir) = started(COUNTER, HostResources::new().with(count.clone())).await;
    assert!(failed.is_empty(), "{failed:?}");
    // Beside the workspace, which `[workspace]` (on by default) starts through the registry.
    assert_eq!(runtime.connector_names(), ["counter", "state"]);
    assert!(
        runtime.tool().description.contains("counts things"),
        "{}",
        runtime.tool().description
    );
    let outcome = runtime
        .call("async () => { await counter.add({ by: 2 }); await state.writeFile('/n.txt', 'x'); return await counter.get({}); }")
        .await
        .unwrap();
    let Outcome::Completed { result, .. } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(result, json!(12));
    assert_eq!(count.0.load(Ordering::SeqCst), 12);
}

#[test]
fn an_unknown_type_is_refused_listing_every_registered_kind() {
    let err = Config::parse_with(
        "[connectors.c]\ntype = \"countr\"\nstart = 1\n",
        "codemode.toml",
        &kinds(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("codemode.toml") && err.contains("line 1"),
        "{err}"
    );
    assert!(
        err.contains(r#"connectors.c: unknown connector type "countr"; the registered kinds are "counter", "mcp", "openapi", "workspace""#),
        "{err}"
    );
    // The built-in kinds alone do not know it.
    let err = Config::parse(COUNTER, "codemode.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown connector type \"counter\""), "{err}");
}

#[test]
fn a_second_kind_of_one_name_is_refused() {
    /// Another kind calling itself `mcp`.
    struct Impostor;
    #[async_trait]
    impl ConnectorKind for Impostor {
        type Config = CounterConfig;
        fn name(&self) -> &str {
            "mcp"
        }
        async fn start(
            &self,
            _: &CounterConfig,
            _: &ConnectorSettings,
            _: &HostResources,
        ) -> Result<Started, BoxError> {
            Err("never started".into())
        }
    }
    assert_eq!(
        kinds().with(CounterKind).unwrap_err(),
        KindError::DuplicateKind {
            kind: "counter".into()
        }
    );
    let err = builtin_kinds().unwrap().with(Impostor).unwrap_err();
    assert_eq!(err, KindError::DuplicateKind { kind: "mcp".into() });
    assert!(err.to_string().contains("must be unique"), "{err}");
    // A connector made in code with a kind the registry does not hold is not started by it.
    let config = codemode::kind::ConnectorConfig::new(
        Impostor,
        ConnectorSettings::new("x"),
        CounterConfig {
            start: 0,
            token_env: None,
        },
    )
    .unwrap();
    let host = HostResources::new();
    let refused = futures::executor::block_on(kinds().start(&config, &host));
    let err = refused.unwrap_err().to_string();
    assert!(
        err.contains("connectors.x") && err.contains("\"mcp\""),
        "{err}"
    );
}

#[test]
fn the_shared_keys_are_read_for_the_kind() {
    let config = Config::parse_with(COUNTER, "codemode.toml", &kinds()).unwrap();
    let counter = &config.connectors["counter"];
    assert_eq!(counter.kind(), "counter");
    assert_eq!(counter.hint(), Some("counts things"));
    assert_eq!(counter.max_in_flight(), Some(2));
    assert_eq!(counter.call_timeout(), Some(Duration::from_secs(5)));
    assert_eq!(counter.config::<CounterConfig>().unwrap().start, 10);
    // Its own keys are its own: an unknown one is named, as is a policy it does not take.
    let err = Config::parse_with(
        "[connectors.counter]\ntype = \"counter\"\nstart = 1\nstep = 2\n",
        "codemode.toml",
        &kinds(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("connectors.counter: unknown field `step`"),
        "{err}"
    );
    let err = Config::parse_with(
        &format!("{COUNTER}[connectors.counter.approval]\nallow = [\"add\"]\n"),
        "codemode.toml",
        &kinds(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("connectors.counter.approval: "), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kinds_secrets_are_checked_and_kept_out_of_its_errors() {
    let toml = format!("{COUNTER}token_env = \"CODEMODE_TEST_COUNTER_TOKEN\"\n");
    let host = || HostResources::new().with(Count::default());
    std::env::remove_var("CODEMODE_TEST_COUNTER_TOKEN");
    let (runtime, failed, _dir) = started(&toml, host()).await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].1.starts_with("connectors.counter.token_env: environment variable CODEMODE_TEST_COUNTER_TOKEN is not set"),
        "{failed:?}"
    );
    // Still a global, whose calls say why it is not there.
    let outcome = runtime.call("async () => counter.get({})").await.unwrap();
    let Outcome::Error { error, .. } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(error.contains("CODEMODE_TEST_COUNTER_TOKEN"), "{error}");

    std::env::set_var("CODEMODE_TEST_COUNTER_TOKEN", "bad-t0ken-value");
    let (_runtime, failed, _dir) = started(&toml, host()).await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    let error = &failed[0].1;
    assert!(
        error.starts_with("connectors.counter: the counter service refused the token"),
        "{error}"
    );
    assert!(!error.contains("bad-t0ken-value"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_host_did_not_provide_is_named() {
    let (_runtime, failed, _dir) = started(COUNTER, HostResources::new()).await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    let error = &failed[0].1;
    assert!(
        error.starts_with("connectors.counter: the host provides no `custom_kind::Count` (the count counters add to)"),
        "{error}"
    );
}
