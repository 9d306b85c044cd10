//! The `mcp` connector kind: `[connectors.NAME]` with `type = "mcp"`.

use crate::config::{McpConfig, McpTransport, DEFAULT_CALL_TIMEOUT_MS};
use crate::connector::McpConnector;
use crate::env::EnvValue;
use async_trait::async_trait;
use codemode::kind::{
    BoxError, ConnectorConfig, ConnectorKind, ConnectorSettings, HostResources, KindError,
    SecretRef, Started,
};
use std::sync::Arc;
use std::time::Duration;

/// MCP servers as connectors (`type = "mcp"`): started over stdio or reached over Streamable
/// HTTP, with the shared approval policy applied to their tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpKind;

impl McpKind {
    /// `config` as a connector of this kind, with its own [`settings`](McpConfig::settings).
    pub fn config(config: McpConfig) -> Result<ConnectorConfig, KindError> {
        ConnectorConfig::new(McpKind, config.settings.clone(), config)
    }
}

#[async_trait]
impl ConnectorKind for McpKind {
    type Config = McpConfig;

    fn name(&self) -> &str {
        "mcp"
    }

    fn takes_policy(&self) -> bool {
        true
    }

    fn default_timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS))
    }

    fn secrets(&self, config: &McpConfig) -> Vec<SecretRef> {
        match &config.transport {
            McpTransport::Stdio { env, .. } => env
                .iter()
                .filter_map(|(key, value)| match value {
                    EnvValue::FromEnv(var) => Some(SecretRef::new(format!("env.{key}"), var)),
                    EnvValue::Literal(_) => None,
                })
                .collect(),
            McpTransport::Http {
                bearer_token_env: Some(var),
                ..
            } => vec![SecretRef::new("bearer_token_env", var)],
            McpTransport::Http { .. } => Vec::new(),
        }
    }

    async fn start(
        &self,
        config: &McpConfig,
        settings: &ConnectorSettings,
        _host: &HostResources,
    ) -> Result<Started, BoxError> {
        // The registry's settings are the ones read from the table (or given in code).
        let config = McpConfig {
            settings: settings.clone(),
            ..config.clone()
        };
        let what = config.transport.describe();
        let connector = McpConnector::connect(config)
            .await
            .map_err(|e| format!("cannot start MCP server {what}: {e}"))?;
        Ok(Started::shared(Arc::new(connector)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode::kind::ConnectorKinds;
    use serde_json::json;

    fn kinds() -> ConnectorKinds {
        ConnectorKinds::new().with(McpKind).unwrap()
    }

    #[test]
    fn a_table_reads_into_the_config_and_the_shared_settings() {
        let c = kinds()
            .read(
                "gh",
                json!({"type": "mcp", "command": "srv", "args": ["-v"], "hint": "h",
                       "timeout_ms": 5, "approval": {"allow": ["x"]},
                       "env": {"T": {"env": "GH_TOKEN"}, "MODE": "ro"}}),
            )
            .unwrap();
        assert_eq!(c.kind(), "mcp");
        assert_eq!(c.hint(), Some("h"));
        assert_eq!(c.call_timeout(), Some(Duration::from_millis(5)));
        assert_eq!(c.settings().approval.allow, ["x"]);
        let mcp = c.config::<McpConfig>().unwrap();
        assert_eq!(mcp.transport.describe(), "srv -v");
        assert_eq!(
            c.secret_refs(),
            [("connectors.gh.env.T".to_string(), "GH_TOKEN".to_string())]
        );
    }

    #[test]
    fn the_default_timeout_is_the_kinds() {
        let c = kinds()
            .read("gh", json!({"type": "mcp", "url": "http://h/mcp"}))
            .unwrap();
        assert_eq!(
            c.call_timeout(),
            Some(Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS))
        );
        let e = kinds()
            .read(
                "gh",
                json!({"type": "mcp", "url": "http://h", "bearer": "T"}),
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("connectors.gh: ") && e.contains("`bearer`"),
            "{e}"
        );
    }

    #[test]
    fn a_config_made_in_code_keeps_its_settings() {
        let mut m = McpConfig::new("gh", McpTransport::http("http://h/mcp"));
        m.settings.hint = Some("h".into());
        m.settings.max_in_flight = Some(3);
        let c = McpKind::config(m).unwrap();
        assert_eq!(
            (c.name(), c.hint(), c.max_in_flight()),
            ("gh", Some("h"), Some(3))
        );
        let mut zero = McpConfig::new("gh", McpTransport::http("http://h/mcp"));
        zero.settings.max_in_flight = Some(0);
        assert!(McpKind::config(zero).is_err());
    }
}
