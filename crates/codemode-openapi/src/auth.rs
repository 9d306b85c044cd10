//! Credentials: read from the environment once, applied to requests host-side, and scrubbed
//! from anything that goes back to the sandbox, the log or the audit trail.

use crate::config::{ApiKeyLocation, AuthConfig};
use crate::error::Cause;
use base64::Engine;
use serde_json::Value;
use std::fmt;

/// Shown in place of a secret.
pub const REDACTED: &str = "[redacted]";

/// Resolved credentials; `Debug` never shows them.
#[derive(Clone, Default)]
pub struct Credentials {
    header: Option<(String, String)>,
    query: Option<(String, String)>,
    secrets: Vec<String>,
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
        match auth {
            None => {}
            Some(AuthConfig::Bearer { token_env }) => {
                let token = env(token_env, "bearer token")?;
                c.header = Some(("Authorization".into(), format!("Bearer {token}")));
                c.secrets.push(token);
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
                c.secrets.push(encoded);
                c.secrets.push(pass);
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
                c.secrets.push(key);
            }
        }
        // Longest first, so a secret containing another is scrubbed whole.
        c.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
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

    /// `text` with every secret replaced.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }

    /// `value` with every secret replaced in every string and key.
    pub fn scrub_value(&self, value: Value) -> Value {
        if self.secrets.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.scrub(&s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.scrub_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.scrub(&k), self.scrub_value(v)))
                    .collect(),
            ),
            other => other,
        }
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
            secrets: vec!["s3cr3t".into()],
        };
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert_eq!(c.scrub("key=s3cr3t;"), "key=[redacted];");
        let v = c.scrub_value(serde_json::json!({"s3cr3t": ["a s3cr3t b", 1]}));
        assert_eq!(v, serde_json::json!({"[redacted]": ["a [redacted] b", 1]}));
        assert!(c.owns(Some("x-key"), None));
        assert!(!c.owns(Some("x-other"), Some("x-key")));
    }
}
