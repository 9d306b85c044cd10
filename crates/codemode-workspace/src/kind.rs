//! The `workspace` connector kind: `[connectors.NAME]` with `type = "workspace"` (the
//! `[workspace]` section of `codemode.toml` is one of these, named `state`).

use crate::{StateConnector, Workspace, WorkspaceOptions};
use async_trait::async_trait;
use codemode::kind::{
    BoxError, ConnectorConfig, ConnectorKind, ConnectorSettings, HostResources, KindError, Started,
};
use codemode::FileStore;
use std::sync::Arc;

/// The hint the workspace's global is shown with when the configuration gives none.
pub const DEFAULT_HINT: &str = "durable files: write large data to files and return a summary";

/// A workspace of durable files as a connector (`type = "workspace"`); its keys are
/// [`WorkspaceOptions`]'. The host provides the store its files live in, an
/// `Arc<dyn codemode::FileStore>`, in the start's [`HostResources`].
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkspaceKind;

impl WorkspaceKind {
    /// The workspace `options` as the connector `name`, shown with [`DEFAULT_HINT`].
    pub fn config(
        name: impl Into<String>,
        options: WorkspaceOptions,
    ) -> Result<ConnectorConfig, KindError> {
        let mut settings = ConnectorSettings::new(name);
        settings.hint = Some(DEFAULT_HINT.to_string());
        ConnectorConfig::new(WorkspaceKind, settings, options)
    }
}

#[async_trait]
impl ConnectorKind for WorkspaceKind {
    type Config = WorkspaceOptions;

    fn name(&self) -> &str {
        "workspace"
    }

    async fn start(
        &self,
        config: &WorkspaceOptions,
        settings: &ConnectorSettings,
        host: &HostResources,
    ) -> Result<Started, BoxError> {
        let store =
            host.require::<Arc<dyn FileStore>>("the store the workspace's files live in")?;
        let workspace = Workspace::new(store.clone(), config.clone())?;
        Ok(Started::new(StateConnector::named(
            &settings.name,
            workspace,
        )))
    }
}
