//! The `demo` connector kind: the to-do list `tasks` (`--demo`, `demo = true`, or
//! `[connectors.tasks]` with `type = "demo"`).

use crate::Tasks;
use async_trait::async_trait;
use codemode::kind::{
    BoxError, ConnectorConfig, ConnectorKind, ConnectorSettings, HostResources, KindError, Started,
};

/// The demo's global: its tools are made under this name.
pub const DEMO_NAME: &str = "tasks";
/// The demo kind's `type` name.
pub const DEMO_KIND: &str = "demo";

/// The demo's table has no keys of its own.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoConfig {}

/// The built-in demo to-do list as a connector (`type = "demo"`). The host provides where
/// its tasks are kept, a [`Tasks`], in the start's [`HostResources`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoKind;

impl DemoKind {
    /// The demo as the connector `tasks`, with its hint.
    pub fn config() -> Result<ConnectorConfig, KindError> {
        let mut settings = ConnectorSettings::new(DEMO_NAME);
        settings.hint = Some("the built-in demo to-do list".to_string());
        ConnectorConfig::new(DemoKind, settings, DemoConfig {})
    }
}

#[async_trait]
impl ConnectorKind for DemoKind {
    type Config = DemoConfig;

    fn name(&self) -> &str {
        DEMO_KIND
    }

    async fn start(
        &self,
        _config: &DemoConfig,
        settings: &ConnectorSettings,
        host: &HostResources,
    ) -> Result<Started, BoxError> {
        if settings.name != DEMO_NAME {
            return Err(format!("the demo connector is always named `{DEMO_NAME}`: write [connectors.{DEMO_NAME}] with type = \"demo\"").into());
        }
        let tasks = host.require::<Tasks>("where the demo keeps its tasks")?;
        Ok(Started::new(crate::connector(tasks.clone())))
    }
}
