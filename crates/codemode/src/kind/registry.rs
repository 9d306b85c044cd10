//! The registry of connector kinds, by `type` name.

use super::config::{ConnectorConfig, Erased, ErasedKind};
use super::connector_kind::{ConnectorKind, Started};
use super::error::{KindError, StartError};
use super::resources::HostResources;
use super::settings::ConnectorSettings;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The connector kinds a host knows, by `type` name: reads each connector's table into a
/// [`ConnectorConfig`] and starts it. See the [module documentation](super) for an example.
#[derive(Clone, Default)]
pub struct ConnectorKinds {
    kinds: BTreeMap<String, Arc<dyn ErasedKind>>,
}

impl ConnectorKinds {
    /// No kinds.
    pub fn new() -> Self {
        ConnectorKinds::default()
    }

    /// Registers `kind` under its `type` name; a second kind of that name is refused.
    pub fn register<K: ConnectorKind>(&mut self, kind: K) -> Result<&mut Self, KindError> {
        let name = kind.name().to_string();
        if self.kinds.contains_key(&name) {
            return Err(KindError::DuplicateKind { kind: name });
        }
        self.kinds.insert(name, Arc::new(Erased(kind)));
        Ok(self)
    }

    /// These kinds and `kind` ([`register`](ConnectorKinds::register) by value).
    pub fn with<K: ConnectorKind>(mut self, kind: K) -> Result<Self, KindError> {
        self.register(kind)?;
        Ok(self)
    }

    /// The registered `type` names, in order.
    pub fn names(&self) -> Vec<String> {
        self.kinds.keys().cloned().collect()
    }

    /// Whether a kind is registered under `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.kinds.contains_key(name)
    }

    /// Reads the table of the connector `name` (the key of `[connectors.NAME]`): its `type`
    /// picks the kind, the shared settings are taken out, and the kind reads the rest.
    /// An error names the table or the key, and an unknown `type` lists the registered kinds.
    pub fn read(&self, name: &str, table: Value) -> Result<ConnectorConfig, KindError> {
        let Value::Object(mut table) = table else {
            return Err(KindError::Invalid {
                key: format!("connectors.{name}"),
                message: format!(
                    "expected a table of settings with `type` (one of {})",
                    self.names().join(", ")
                ),
            });
        };
        let kind_name = match table.remove("type") {
            None => {
                return Err(KindError::NoKind {
                    connector: name.to_string(),
                    known: self.names(),
                })
            }
            Some(Value::String(kind)) => kind,
            Some(other) => {
                return Err(KindError::UnknownKind {
                    connector: name.to_string(),
                    kind: other.to_string(),
                    known: self.names(),
                })
            }
        };
        let Some(kind) = self.kinds.get(&kind_name) else {
            return Err(KindError::UnknownKind {
                connector: name.to_string(),
                kind: kind_name,
                known: self.names(),
            });
        };
        let settings = ConnectorSettings::take(name, &mut table)?;
        let config = kind
            .parse(Value::Object(table))
            .map_err(|message| KindError::Invalid {
                key: format!("connectors.{name}"),
                message,
            })?;
        ConnectorConfig::checked(kind.clone(), settings, config)
    }

    /// Starts `config` with the kind registered under its `type` name, after checking the
    /// secrets it names; `host` holds what kinds ask their host for. A failure names the
    /// connector and holds no secret value.
    pub async fn start(
        &self,
        config: &ConnectorConfig,
        host: &HostResources,
    ) -> Result<Started, StartError> {
        let registered = self
            .kinds
            .get(config.kind())
            .is_some_and(|k| k.kind_type() == config.kind_type());
        if !registered {
            return Err(StartError::Unregistered {
                connector: config.name().to_string(),
                kind: config.kind().to_string(),
                known: self.names(),
            });
        }
        config.start(host).await
    }
}

impl fmt::Debug for ConnectorKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConnectorKinds")
            .field(&self.names())
            .finish()
    }
}
