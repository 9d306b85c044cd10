//! Every secret a connector names must be set before it starts; the error names the key.

use super::ConnectorConfig;
use codemode_mcp::{EnvValue, McpTransport};
use codemode_openapi::AuthConfig;

/// A secret the configuration names whose environment variable is not set.
#[derive(Debug, thiserror::Error)]
#[error("{field}: environment variable {var} is not set (secrets are read from the environment)")]
pub struct MissingSecret {
    /// Where the reference is written, e.g. `connectors.github.env.TOKEN`.
    pub field: String,
    /// The variable.
    pub var: String,
}

impl ConnectorConfig {
    /// Every `(key, variable)` secret reference of the connector.
    pub fn secret_refs(&self) -> Vec<(String, String)> {
        let name = self.name();
        let mut refs = Vec::new();
        match self {
            ConnectorConfig::Mcp(m) => match &m.transport {
                McpTransport::Stdio { env, .. } => {
                    for (k, v) in env {
                        if let EnvValue::FromEnv(var) = v {
                            refs.push((format!("connectors.{name}.env.{k}"), var.clone()));
                        }
                    }
                }
                McpTransport::Http {
                    bearer_token_env: Some(var),
                    ..
                } => refs.push((format!("connectors.{name}.bearer_token_env"), var.clone())),
                McpTransport::Http { .. } => {}
            },
            ConnectorConfig::Openapi(o) => {
                let field = format!("connectors.{name}.auth");
                match &o.auth {
                    Some(AuthConfig::Bearer { token_env }) => {
                        refs.push((format!("{field}.token_env"), token_env.clone()))
                    }
                    Some(AuthConfig::Basic {
                        username_env,
                        password_env,
                    }) => {
                        refs.push((format!("{field}.username_env"), username_env.clone()));
                        refs.push((format!("{field}.password_env"), password_env.clone()));
                    }
                    Some(AuthConfig::ApiKey { value_env, .. }) => {
                        refs.push((format!("{field}.value_env"), value_env.clone()))
                    }
                    None => {}
                }
            }
        }
        refs
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
}
