//! The search/execute server's connector as a kind, so that `codemode openapi SPEC` starts it
//! through the registry and [`crate::start_connectors`] like every other connector: its
//! secrets checked before it starts, their values scrubbed from why it failed, its shared
//! settings applied to the runtime.

use super::query::SpecIndex;
use super::spec::{spec_connectors, SpecApi, SpecConnectors};
use async_trait::async_trait;
use codemode::kind::{
    BoxError, ConnectorConfig, ConnectorKind, ConnectorSettings, HostResources, KindError,
    SecretRef, Started,
};
use codemode_openapi::{OpenApiConfig, OpenApiConnector, OpenApiKind};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// `type = "openapi-spec"`: an OpenAPI document (an `openapi` table) loaded with
/// `expose_spec`, started as the `execute` side of the search/execute server (document
/// queries and `request()`). The `search` side and the document's index are kept for the
/// host, which takes them with [`SpecKind::take_loaded`] to build the `search` runtime.
#[derive(Clone, Default)]
pub struct SpecKind {
    loaded: Arc<Mutex<Option<LoadedSpec>>>,
}

/// What a start of [`SpecKind`] leaves for the host besides the `execute` connector.
pub struct LoadedSpec {
    /// The connector of the `search` tool: document queries, no `request()`.
    pub search: SpecApi,
    /// The index both sides share.
    pub index: Arc<SpecIndex>,
    /// The configured `description` of what the API is for.
    pub description: Option<String>,
}

impl SpecKind {
    /// A kind with nothing loaded yet.
    pub fn new() -> Self {
        SpecKind::default()
    }

    /// `config` as a connector of this kind (sharing what it loads with this kind).
    pub fn config(&self, config: OpenApiConfig) -> Result<ConnectorConfig, KindError> {
        ConnectorConfig::new(self.clone(), config.settings.clone(), config)
    }

    /// The `search` side of the document started last, once.
    pub fn take_loaded(&self) -> Option<LoadedSpec> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

#[async_trait]
impl ConnectorKind for SpecKind {
    type Config = OpenApiConfig;

    fn name(&self) -> &str {
        "openapi-spec"
    }

    fn takes_policy(&self) -> bool {
        true
    }

    fn default_timeout(&self) -> Option<Duration> {
        OpenApiKind.default_timeout()
    }

    fn secrets(&self, config: &OpenApiConfig) -> Vec<SecretRef> {
        OpenApiKind.secrets(config)
    }

    async fn start(
        &self,
        config: &OpenApiConfig,
        settings: &ConnectorSettings,
        _host: &HostResources,
    ) -> Result<Started, BoxError> {
        let config = OpenApiConfig {
            settings: settings.clone(),
            expose_spec: true,
            ..config.clone()
        };
        let spec = config.spec.clone();
        let api = OpenApiConnector::from_spec(config)
            .await
            .map_err(|e| format!("cannot load the OpenAPI document {spec}: {e}"))?;
        let SpecConnectors {
            search,
            execute,
            index,
            description,
        } = spec_connectors(&settings.name, api)
            .await
            .map_err(|e| format!("cannot read the document {spec}: {e}"))?;
        *self.loaded.lock().unwrap_or_else(PoisonError::into_inner) = Some(LoadedSpec {
            search,
            index,
            description,
        });
        Ok(Started::new(execute))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode::kind::ConnectorKinds;

    /// A bearer token's variable is checked before the document is loaded, and nothing is
    /// left for the host when the start fails.
    #[tokio::test]
    async fn a_missing_secret_is_named_before_the_start() {
        let kind = SpecKind::new();
        let kinds = ConnectorKinds::new().with(kind.clone()).unwrap();
        let mut config = OpenApiConfig::new("api", "/no/such/spec.yaml");
        config.auth = Some(codemode_openapi::AuthConfig::Bearer {
            token_env: "CODEMODE_TEST_SPEC_KIND_UNSET".into(),
        });
        let e = kinds
            .start(&kind.config(config).unwrap(), &HostResources::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("connectors.api.auth.token_env")
                && e.contains("CODEMODE_TEST_SPEC_KIND_UNSET"),
            "{e}"
        );
        let e = kinds
            .start(
                &kind
                    .config(OpenApiConfig::new("api", "/no/such/spec.yaml"))
                    .unwrap(),
                &HostResources::new(),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("connectors.api: cannot load the OpenAPI document /no/such/spec.yaml"),
            "{e}"
        );
        assert!(kind.take_loaded().is_none());
    }
}
