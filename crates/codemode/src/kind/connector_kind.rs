//! The trait a connector crate implements to offer a kind of connector.

use super::resources::HostResources;
use super::settings::ConnectorSettings;
use crate::connector::Connector;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Why a kind could not start a connector: its message is shown to people and the model.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A kind of connector, named by `type` in configuration.
///
/// The registry ([`ConnectorKinds`](super::ConnectorKinds)) reads the shared settings
/// ([`ConnectorSettings`]) and `type` out of each table; [`Config`](ConnectorKind::Config) is
/// read from the keys left (so it should refuse unknown keys). The policy keys (`approval`,
/// `reverts`, `tools`) reach a kind only when it [takes them](ConnectorKind::takes_policy);
/// for any other kind a table that sets one is an error naming it.
#[async_trait]
pub trait ConnectorKind: Send + Sync + 'static {
    /// The kind's own configuration: the keys of its table that are not shared.
    type Config: DeserializeOwned + fmt::Debug + Send + Sync + 'static;

    /// Its `type` name.
    fn name(&self) -> &str;

    /// Whether its connectors apply the shared approval policy (`approval`, `reverts`,
    /// `tools`); kinds whose tools decide their own approval leave this `false`.
    fn takes_policy(&self) -> bool {
        false
    }

    /// How long one call may take when the table sets no `timeout_ms` (`None`: no limit of
    /// its own; the pass's deadline still bounds every call).
    fn default_timeout(&self) -> Option<Duration> {
        None
    }

    /// Every secret `config` names: where it is written (relative to the table, e.g.
    /// `env.TOKEN`) and the environment variable holding it.
    fn secrets(&self, config: &Self::Config) -> Vec<SecretRef> {
        let _ = config;
        Vec::new()
    }

    /// Starts one connector named `settings.name`. A failure's message says why in one
    /// sentence (the registry puts `connectors.NAME: ` before it and scrubs secret values
    /// from it); what the host must provide is asked of `host` by type.
    async fn start(
        &self,
        config: &Self::Config,
        settings: &ConnectorSettings,
        host: &HostResources,
    ) -> Result<Started, BoxError>;
}

/// A secret a configuration names: where, and which environment variable holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    /// The key, relative to the connector's table (`env.TOKEN`, `auth.token_env`).
    pub key: String,
    /// The environment variable.
    pub var: String,
}

impl SecretRef {
    /// The secret in `var`, written at `key`.
    pub fn new(key: impl Into<String>, var: impl Into<String>) -> Self {
        SecretRef {
            key: key.into(),
            var: var.into(),
        }
    }
}

/// A started connector, and what it left out or renamed (one sentence each).
pub struct Started {
    /// The connector.
    pub connector: Arc<dyn Connector>,
    /// What is degraded without stopping it (tools left out or renamed, unused settings).
    pub warnings: Vec<String>,
}

impl Started {
    /// `connector`, with its own [`warnings`](Connector::warnings).
    pub fn new(connector: impl Connector + 'static) -> Self {
        Started::shared(Arc::new(connector))
    }

    /// A shared `connector`, with its own [`warnings`](Connector::warnings).
    pub fn shared(connector: Arc<dyn Connector>) -> Self {
        let warnings = connector.warnings();
        Started {
            connector,
            warnings,
        }
    }
}

impl fmt::Debug for Started {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Started")
            .field("connector", &self.connector.name())
            .field("warnings", &self.warnings)
            .finish()
    }
}
