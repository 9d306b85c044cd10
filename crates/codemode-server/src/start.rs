//! Starting configured connectors through the registry of connector kinds, into a runtime.

pub use codemode::kind::StartError;
use codemode::kind::{ConnectorConfig, ConnectorKinds, HostResources};
use codemode::RuntimeBuilder;

/// A runtime builder with connectors started into it, and what went wrong.
pub struct StartedConnectors {
    /// The builder, with every connector added (started or declared unavailable).
    pub builder: RuntimeBuilder,
    /// `(connector, error)` for each connector that could not start.
    pub failed: Vec<(String, String)>,
    /// `(connector, warning)` for what a started connector left out or renamed.
    pub warnings: Vec<(String, String)>,
}

/// Starts `connectors` in order through `kinds`, with what the host provides in `host`, and
/// adds each to `builder` with its shared settings (hint, `max_in_flight`, call timeout).
/// One that cannot start is added as unavailable: still a global, whose every call says
/// why.
///
/// ```no_run
/// # async fn host(store: std::sync::Arc<dyn codemode::StoreWithFiles>, executor: std::sync::Arc<dyn codemode::Executor>) -> Result<(), Box<dyn std::error::Error>> {
/// use codemode::kind::HostResources;
/// use codemode_server::config::{builtin_kinds, Config};
///
/// let kinds = builtin_kinds()?; // .with(MyKind)? adds a kind of your own
/// let config = Config::parse_with("[connectors.docs]\ntype = \"mcp\"\nurl = \"http://127.0.0.1:3001/mcp\"\n", "codemode.toml", &kinds)?;
/// let files: std::sync::Arc<dyn codemode::FileStore> = store.clone(); // the workspace's files
/// let host = HostResources::new().with(files);
/// let builder = codemode::Runtime::builder(store, executor);
/// let started = codemode_server::start_connectors(&kinds, &config.connectors_to_start()?, &host, builder).await;
/// let runtime = started.builder.build()?;
/// # Ok(()) }
/// ```
pub async fn start_connectors(
    kinds: &ConnectorKinds,
    connectors: &[ConnectorConfig],
    host: &HostResources,
    mut builder: RuntimeBuilder,
) -> StartedConnectors {
    let (mut failed, mut warnings) = (Vec::new(), Vec::new());
    for connector in connectors {
        let name = connector.name().to_string();
        let started = kinds.start(connector, host).await;
        match started {
            Ok(started) => {
                warnings.extend(started.warnings.into_iter().map(|w| (name.clone(), w)));
                builder = builder.connector_arc(started.connector);
                if let Some(timeout) = connector.call_timeout() {
                    builder = builder.call_timeout_for(name.clone(), timeout);
                }
                if let Some(n) = connector.max_in_flight() {
                    builder = builder.max_in_flight_for(name.clone(), n);
                }
                if let Some(hint) = connector.hint() {
                    builder = builder.hint(name.clone(), hint);
                }
            }
            Err(e) => {
                let error = e.to_string();
                tracing::warn!(connector = %name, %error, "connector not started");
                builder = builder.unavailable_connector(name.clone(), error.clone());
                failed.push((name, error));
            }
        }
    }
    StartedConnectors {
        builder,
        failed,
        warnings,
    }
}
