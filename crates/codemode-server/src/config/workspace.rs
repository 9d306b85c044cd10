//! `[workspace]`: the durable files the sandbox reaches as the global `state`.

use codemode::kind::ConnectorConfig;
use codemode::FileStore;
use codemode_workspace::{Workspace, WorkspaceError, WorkspaceKind, WorkspaceOptions};
use serde::Deserialize;
use std::sync::Arc;

/// `[workspace]`: whether the sandbox has the global `state`, its name, and the workspace's
/// limits. On by default; every key has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceSection {
    /// Whether the connector is in the sandbox (default true). Cut MCP results are saved to
    /// the workspace only when it is.
    pub enabled: bool,
    /// The global the sandbox reaches it as (default `state`).
    pub name: String,
    /// The workspace's name in the store (default `default`).
    pub workspace: String,
    /// The most bytes all its files may hold (default 64 MiB).
    pub quota_bytes: u64,
    /// The most bytes one file may hold (default 8 MiB).
    pub max_file_bytes: u64,
    /// The most entries one `list` or `glob` returns (default 1,000).
    pub max_entries: usize,
}

impl Default for WorkspaceSection {
    fn default() -> Self {
        let o = WorkspaceOptions::default();
        WorkspaceSection {
            enabled: true,
            name: codemode_workspace::DEFAULT_CONNECTOR_NAME.to_string(),
            workspace: o.workspace,
            quota_bytes: o.quota_bytes,
            max_file_bytes: o.max_file_bytes,
            max_entries: o.max_entries,
        }
    }
}

impl WorkspaceSection {
    /// The options of the workspace it names.
    pub fn options(&self) -> WorkspaceOptions {
        WorkspaceOptions {
            workspace: self.workspace.clone(),
            quota_bytes: self.quota_bytes,
            max_file_bytes: self.max_file_bytes,
            max_entries: self.max_entries,
        }
    }

    /// The workspace on `store`, or `None` when `enabled = false`; refuses a bad name.
    pub fn open(&self, store: Arc<dyn FileStore>) -> Result<Option<Workspace>, WorkspaceError> {
        match self.enabled {
            true => Workspace::new(store, self.options()).map(Some),
            false => Ok(None),
        }
    }

    /// The section as a connector of the `workspace` kind, or `None` when `enabled = false`;
    /// `connectors` are the other connectors' names, which its global must not take.
    pub fn connector<'a>(
        &self,
        connectors: impl Iterator<Item = &'a String>,
    ) -> Result<Option<ConnectorConfig>, String> {
        self.check(connectors)?;
        if !self.enabled {
            return Ok(None);
        }
        WorkspaceKind::config(&self.name, self.options())
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// Refuses a section that cannot work, naming the key; `connectors` are the configured
    /// connectors' names, which the global must not take.
    pub fn check<'a>(
        &self,
        mut connectors: impl Iterator<Item = &'a String>,
    ) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        let ident = self
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(format!("`workspace.name = {:?}` is not a JavaScript identifier; use letters, digits and `_`, e.g. \"state\"", self.name));
        }
        if connectors.any(|c| *c == self.name) {
            return Err(format!("`workspace.name = {:?}` is also a connector's name ([connectors.{0}]); rename one, or set `workspace.enabled = false`", self.name));
        }
        if self.max_entries == 0 {
            return Err("`workspace.max_entries = 0` would make every list empty; use at least 1, or leave it out for the default".into());
        }
        let w = &self.workspace;
        let good = !w.is_empty()
            && w.len() <= 64
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !good {
            return Err(format!("`workspace.workspace = {w:?}` is not a workspace name; use 1 to 64 letters, digits, `.`, `_` or `-`"));
        }
        Ok(())
    }
}
