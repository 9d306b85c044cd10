//! The `openapi` connector kind: `[connectors.NAME]` with `type = "openapi"`.

use crate::config::{AuthConfig, OpenApiConfig, DEFAULT_TIMEOUT_MS};
use crate::connector::OpenApiConnector;
use async_trait::async_trait;
use codemode::kind::{
    BoxError, ConnectorConfig, ConnectorKind, ConnectorSettings, HostResources, KindError,
    SecretRef, Started,
};
use std::sync::Arc;
use std::time::Duration;

/// OpenAPI 3.x documents as connectors (`type = "openapi"`), one method per operation, with
/// the shared approval policy applied to the operations.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenApiKind;

impl OpenApiKind {
    /// `config` as a connector of this kind, with its own [`settings`](OpenApiConfig::settings).
    pub fn config(config: OpenApiConfig) -> Result<ConnectorConfig, KindError> {
        ConnectorConfig::new(OpenApiKind, config.settings.clone(), config)
    }
}

#[async_trait]
impl ConnectorKind for OpenApiKind {
    type Config = OpenApiConfig;

    fn name(&self) -> &str {
        "openapi"
    }

    fn takes_policy(&self) -> bool {
        true
    }

    fn default_timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(DEFAULT_TIMEOUT_MS))
    }

    fn secrets(&self, config: &OpenApiConfig) -> Vec<SecretRef> {
        match &config.auth {
            Some(AuthConfig::Bearer { token_env }) => {
                vec![SecretRef::new("auth.token_env", token_env)]
            }
            Some(AuthConfig::Basic {
                username_env,
                password_env,
            }) => vec![
                SecretRef::new("auth.username_env", username_env),
                SecretRef::new("auth.password_env", password_env),
            ],
            Some(AuthConfig::ApiKey { value_env, .. }) => {
                vec![SecretRef::new("auth.value_env", value_env)]
            }
            None => Vec::new(),
        }
    }

    async fn start(
        &self,
        config: &OpenApiConfig,
        settings: &ConnectorSettings,
        _host: &HostResources,
    ) -> Result<Started, BoxError> {
        // The registry's settings are the ones read from the table (or given in code).
        let config = OpenApiConfig {
            settings: settings.clone(),
            ..config.clone()
        };
        let spec = config.spec.clone();
        let connector = OpenApiConnector::from_spec(config)
            .await
            .map_err(|e| format!("cannot load {spec}: {e}"))?;
        Ok(Started::shared(Arc::new(connector)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode::kind::ConnectorKinds;
    use serde_json::json;

    #[test]
    fn a_table_reads_into_the_config_and_its_secrets() {
        let kinds = ConnectorKinds::new().with(OpenApiKind).unwrap();
        let c = kinds
            .read(
                "pets",
                json!({"type": "openapi", "spec": "p.yaml", "max_in_flight": 4,
                       "auth": {"type": "basic", "username_env": "U", "password_env": "P"}}),
            )
            .unwrap();
        assert_eq!(c.config::<OpenApiConfig>().unwrap().spec, "p.yaml");
        assert_eq!(c.max_in_flight(), Some(4));
        assert_eq!(
            c.call_timeout(),
            Some(Duration::from_millis(DEFAULT_TIMEOUT_MS))
        );
        let vars: Vec<String> = c.secret_refs().into_iter().map(|r| r.0).collect();
        assert_eq!(
            vars,
            [
                "connectors.pets.auth.username_env",
                "connectors.pets.auth.password_env"
            ]
        );
        let e = kinds
            .read("pets", json!({"type": "openapi", "spec": "p", "base": "x"}))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("connectors.pets: ") && e.contains("`base`"),
            "{e}"
        );
    }

    /// Why a start failed names the connector and the document it could not load.
    #[tokio::test]
    async fn a_start_failure_names_the_connector() {
        let kinds = ConnectorKinds::new().with(OpenApiKind).unwrap();
        let c = kinds
            .read(
                "pets",
                json!({"type": "openapi", "spec": "/no/such/spec.yaml"}),
            )
            .unwrap();
        let e = kinds
            .start(&c, &HostResources::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("connectors.pets: cannot load /no/such/spec.yaml"),
            "{e}"
        );
    }
}
