//! Credentials: read from the environment once, applied to requests host-side, and scrubbed
//! from anything that goes back to the sandbox, the log or the audit trail, in every form an
//! API may echo them in ([`codemode::secrets`]: raw, percent-encoded, JSON-escaped, base64).

use crate::config::{ApiKeyLocation, AuthConfig};
use crate::error::Cause;
use base64::Engine;
use codemode::secrets::Secrets;
use serde_json::Value;
use std::fmt;

/// Shown in place of a secret.
pub use codemode::secrets::REDACTED;

/// Resolved credentials; `Debug` never shows them.
#[derive(Clone, Default)]
pub struct Credentials {
    header: Option<(String, String)>,
    query: Option<(String, String)>,
    secrets: Secrets,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("header", &self.header.as_ref().map(|(n, _)| n))
            .field("query", &self.query.as_ref().map(|(n, _)| n))
            .finish()
    }
}

fn env(var: &str, what: &str) -> Result<String, Cause> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(Cause::MissingEnv {
            var: var.to_string(),
            what: what.to_string(),
        }),
    }
}

impl Credentials {
    /// Reads the configured variables; a missing one is an error naming it.
    pub fn from_config(auth: Option<&AuthConfig>) -> Result<Credentials, Cause> {
        let mut c = Credentials::default();
        let mut secrets = Vec::new();
        match auth {
            None => {}
            Some(AuthConfig::Bearer { token_env }) => {
                let token = env(token_env, "bearer token")?;
                c.header = Some(("Authorization".into(), format!("Bearer {token}")));
                secrets.push(token);
            }
            Some(AuthConfig::Basic {
                username_env,
                password_env,
            }) => {
                let user = env(username_env, "basic-auth user name")?;
                let pass = env(password_env, "basic-auth password")?;
                let encoded =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                c.header = Some(("Authorization".into(), format!("Basic {encoded}")));
                secrets.push(format!("{user}:{pass}"));
                secrets.push(encoded);
                secrets.push(pass);
            }
            Some(AuthConfig::ApiKey {
                location,
                name,
                value_env,
            }) => {
                let key = env(value_env, "API key")?;
                match location {
                    ApiKeyLocation::Header => c.header = Some((name.clone(), key.clone())),
                    ApiKeyLocation::Query => c.query = Some((name.clone(), key.clone())),
                }
                secrets.push(key);
            }
        }
        c.secrets = Secrets::new(secrets);
        Ok(c)
    }

    /// The header to add, if any.
    pub fn header(&self) -> Option<(&str, &str)> {
        self.header.as_ref().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The query parameter to add, if any.
    pub fn query(&self) -> Option<(&str, &str)> {
        self.query.as_ref().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Whether the model supplied a header or query name that the credentials own.
    pub fn owns(&self, header: Option<&str>, query: Option<&str>) -> bool {
        let h = match (header, &self.header) {
            (Some(a), Some((b, _))) => a.eq_ignore_ascii_case(b),
            _ => false,
        };
        let q = match (query, &self.query) {
            (Some(a), Some((b, _))) => a == b,
            _ => false,
        };
        h || q
    }

    /// `text` with every secret replaced, in every form it may be echoed in.
    pub fn scrub(&self, text: &str) -> String {
        self.secrets.scrub(text)
    }

    /// `value` with every secret replaced in every string and key.
    pub fn scrub_value(&self, value: Value) -> Value {
        self.secrets.scrub_value(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_variable_is_named() {
        let err = Credentials::from_config(Some(&AuthConfig::Bearer {
            token_env: "CODEMODE_TEST_SURELY_UNSET_VAR".into(),
        }))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable CODEMODE_TEST_SURELY_UNSET_VAR (bearer token) is not set"
        );
    }

    #[test]
    fn debug_and_scrub_hide_secrets() {
        let c = Credentials {
            header: Some(("X-Key".into(), "s3cr3t".into())),
            query: None,
            secrets: Secrets::new(["s3cr3t"]),
        };
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert_eq!(c.scrub("key=s3cr3t;"), "key=[redacted];");
        let v = c.scrub_value(serde_json::json!({"s3cr3t": ["a s3cr3t b", 1]}));
        assert_eq!(v, serde_json::json!({"[redacted]": ["a [redacted] b", 1]}));
        assert!(c.owns(Some("x-key"), None));
        assert!(!c.owns(Some("x-other"), Some("x-key")));
    }
}
