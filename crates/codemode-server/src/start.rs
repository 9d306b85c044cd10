//! Starting the configured connectors.

use crate::config::ConnectorConfig;
use codemode::Connector;
use std::sync::Arc;

/// A connector that could not start: which one and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(String);

/// Starts one configured connector; an error names the connector's key and why.
pub async fn start_connector(config: &ConnectorConfig) -> Result<Arc<dyn Connector>, StartError> {
    Ok(start_connector_warned(config).await?.0)
}

/// [`start_connector`], with what went wrong without stopping the connector (tools renamed or
/// left out, unused configuration): one sentence each, naming the connector.
pub async fn start_connector_warned(
    config: &ConnectorConfig,
) -> Result<(Arc<dyn Connector>, Vec<String>), StartError> {
    config
        .check_secrets()
        .map_err(|e| StartError(e.to_string()))?;
    // What a failed start says is shown to the model and printed: no secret value in it.
    let secrets = codemode::secrets::Secrets::new(
        config
            .secret_refs()
            .into_iter()
            .filter_map(|(_, var)| std::env::var(var).ok()),
    );
    start(config)
        .await
        .map_err(|e| StartError(secrets.scrub(&e.0)))
}

async fn start(config: &ConnectorConfig) -> Result<(Arc<dyn Connector>, Vec<String>), StartError> {
    let name = config.name();
    match config {
        ConnectorConfig::Openapi(o) => {
            let c = codemode_openapi::OpenApiConnector::from_spec(o.clone())
                .await
                .map_err(|e| {
                    StartError(format!("connectors.{name}: cannot load {}: {e}", o.spec))
                })?;
            let warnings = c.warnings();
            Ok((Arc::new(c), warnings))
        }
        ConnectorConfig::Mcp(m) => {
            let what = m.transport.describe();
            let c = codemode_mcp::McpConnector::connect(m.clone())
                .await
                .map_err(|e| {
                    StartError(format!(
                        "connectors.{name}: cannot start MCP server {what}: {e}"
                    ))
                })?;
            let warnings = c.warnings();
            Ok((Arc::new(c), warnings))
        }
    }
}
