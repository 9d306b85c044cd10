//! One configured connector: its kind, the shared settings and the kind's own configuration.

use super::connector_kind::{BoxError, ConnectorKind, SecretRef, Started};
use super::error::{KindError, MissingSecret, StartError};
use super::resources::HostResources;
use super::settings::ConnectorSettings;
use async_trait::async_trait;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A kind's configuration, whatever its type.
pub(super) trait AnyConfig: Any + fmt::Debug + Send + Sync {
    /// Itself, to be downcast to the kind's `Config`.
    fn as_any(&self) -> &(dyn Any + Send + Sync);
}

impl<T: Any + fmt::Debug + Send + Sync> AnyConfig for T {
    fn as_any(&self) -> &(dyn Any + Send + Sync) {
        self
    }
}

/// A [`ConnectorKind`] whatever its `Config` type.
#[async_trait]
pub(super) trait ErasedKind: Send + Sync {
    /// Its `type` name.
    fn name(&self) -> &str;
    /// The type implementing the kind, which tells two kinds of one name apart.
    fn kind_type(&self) -> TypeId;
    /// See [`ConnectorKind::takes_policy`].
    fn takes_policy(&self) -> bool;
    /// See [`ConnectorKind::default_timeout`].
    fn default_timeout(&self) -> Option<Duration>;
    /// Reads the kind's own keys.
    fn parse(&self, table: Value) -> Result<Arc<dyn AnyConfig>, String>;
    /// See [`ConnectorKind::secrets`].
    fn secrets(&self, config: &(dyn Any + Send + Sync)) -> Vec<SecretRef>;
    /// See [`ConnectorKind::start`].
    async fn start(
        &self,
        config: &(dyn Any + Send + Sync),
        settings: &ConnectorSettings,
        host: &HostResources,
    ) -> Result<Started, BoxError>;
}

/// A kind behind [`ErasedKind`].
pub(super) struct Erased<K>(pub K);

#[async_trait]
impl<K: ConnectorKind> ErasedKind for Erased<K> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn kind_type(&self) -> TypeId {
        TypeId::of::<K>()
    }

    fn takes_policy(&self) -> bool {
        self.0.takes_policy()
    }

    fn default_timeout(&self) -> Option<Duration> {
        self.0.default_timeout()
    }

    fn parse(&self, table: Value) -> Result<Arc<dyn AnyConfig>, String> {
        serde_json::from_value::<K::Config>(table)
            .map(|c| Arc::new(c) as Arc<dyn AnyConfig>)
            .map_err(|e| e.to_string())
    }

    fn secrets(&self, config: &(dyn Any + Send + Sync)) -> Vec<SecretRef> {
        config
            .downcast_ref::<K::Config>()
            .map_or_else(Vec::new, |c| self.0.secrets(c))
    }

    async fn start(
        &self,
        config: &(dyn Any + Send + Sync),
        settings: &ConnectorSettings,
        host: &HostResources,
    ) -> Result<Started, BoxError> {
        let Some(config) = config.downcast_ref::<K::Config>() else {
            return Err(format!("its configuration is not the {:?} kind's", self.0.name()).into());
        };
        self.0.start(config, settings, host).await
    }
}

/// One connector as configured: which kind it is, the settings every kind shares, and the
/// kind's own configuration. Read from a table by
/// [`ConnectorKinds::read`](super::ConnectorKinds::read), or made in code with
/// [`ConnectorConfig::new`]; started by [`ConnectorKinds::start`](super::ConnectorKinds::start).
#[derive(Clone)]
pub struct ConnectorConfig {
    kind: Arc<dyn ErasedKind>,
    settings: ConnectorSettings,
    config: Arc<dyn AnyConfig>,
}

impl ConnectorConfig {
    /// A connector of `kind` with `settings` and the kind's own `config`; refuses what a
    /// table would be refused for (a cap or timeout of 0, a policy the kind does not take).
    pub fn new<K: ConnectorKind>(
        kind: K,
        settings: ConnectorSettings,
        config: K::Config,
    ) -> Result<Self, KindError> {
        ConnectorConfig::checked(Arc::new(Erased(kind)), settings, Arc::new(config))
    }

    /// The configuration, once its settings are checked against its kind.
    pub(super) fn checked(
        kind: Arc<dyn ErasedKind>,
        settings: ConnectorSettings,
        config: Arc<dyn AnyConfig>,
    ) -> Result<Self, KindError> {
        settings.check()?;
        if let Some(key) = settings
            .policy_keys()
            .first()
            .filter(|_| !kind.takes_policy())
        {
            return Err(KindError::Invalid {
                key: format!("connectors.{}.{key}", settings.name),
                message: format!(
                    "connectors of type {:?} take no `{key}`: their tools decide their own approval and reverts; remove it",
                    kind.name()
                ),
            });
        }
        Ok(ConnectorConfig {
            kind,
            settings,
            config,
        })
    }

    /// Its kind's `type` name.
    pub fn kind(&self) -> &str {
        self.kind.name()
    }

    /// The type implementing its kind.
    pub(super) fn kind_type(&self) -> TypeId {
        self.kind.kind_type()
    }

    /// The global name in the sandbox.
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// The settings every kind shares.
    pub fn settings(&self) -> &ConnectorSettings {
        &self.settings
    }

    /// The hint shown in the tool description.
    pub fn hint(&self) -> Option<&str> {
        self.settings.hint.as_deref()
    }

    /// Calls of this connector in flight at once in one execution, when it sets its own cap.
    pub fn max_in_flight(&self) -> Option<usize> {
        self.settings.max_in_flight
    }

    /// How long one call may take: `timeout_ms`, else the kind's default (`None`: the pass's
    /// deadline alone bounds a call).
    pub fn call_timeout(&self) -> Option<Duration> {
        self.settings
            .timeout_ms
            .map(Duration::from_millis)
            .or_else(|| self.kind.default_timeout())
    }

    /// The kind's own configuration, when it is a `T` (the shared keys are in
    /// [`settings`](ConnectorConfig::settings), not in it).
    pub fn config<T: Any>(&self) -> Option<&T> {
        self.any().downcast_ref::<T>()
    }

    fn any(&self) -> &(dyn Any + Send + Sync) {
        // Through the trait object: `Arc<dyn AnyConfig>` is itself an `AnyConfig`.
        let config: &dyn AnyConfig = &*self.config;
        config.as_any()
    }

    /// Every `(key, variable)` secret reference, the key from the configuration's root
    /// (`connectors.github.env.TOKEN`).
    pub fn secret_refs(&self) -> Vec<(String, String)> {
        self.kind
            .secrets(self.any())
            .into_iter()
            .map(|s| (format!("connectors.{}.{}", self.name(), s.key), s.var))
            .collect()
    }

    /// Checks that every secret the connector references is set.
    pub fn check_secrets(&self) -> Result<(), MissingSecret> {
        for (field, var) in self.secret_refs() {
            if std::env::var_os(&var).is_none() {
                return Err(MissingSecret { field, var });
            }
        }
        Ok(())
    }

    /// Checks its secrets and starts it; what a failure says holds no secret value.
    pub(super) async fn start(&self, host: &HostResources) -> Result<Started, StartError> {
        self.check_secrets()?;
        let secrets = crate::secrets::Secrets::new(
            self.secret_refs()
                .into_iter()
                .filter_map(|(_, var)| std::env::var(var).ok()),
        );
        self.kind
            .start(self.any(), &self.settings, host)
            .await
            .map_err(|e| StartError::Failed {
                connector: self.name().to_string(),
                message: secrets.scrub(&e.to_string()),
            })
    }
}

impl fmt::Debug for ConnectorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectorConfig")
            .field("kind", &self.kind())
            .field("settings", &self.settings)
            .field("config", &self.config)
            .finish()
    }
}
