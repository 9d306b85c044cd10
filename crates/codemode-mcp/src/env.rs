//! The environment a stdio server starts with: a few harmless variables passed through from
//! codemode's own environment, plus exactly the variables its configuration names.

use crate::error::Cause;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::fmt;

/// Variables passed through from codemode's environment when set (as the MCP SDKs' stdio clients do).
pub const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "LANG", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR",
];

/// One configured variable: a literal value, or a secret read from codemode's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// This exact value (`MODE = "ro"`).
    Literal(String),
    /// The value of this variable of codemode's environment, read at start
    /// (`GITHUB_TOKEN = { env = "MY_GH_TOKEN" }`).
    FromEnv(String),
}

impl From<&str> for EnvValue {
    fn from(value: &str) -> Self {
        EnvValue::Literal(value.to_string())
    }
}

impl From<String> for EnvValue {
    fn from(value: String) -> Self {
        EnvValue::Literal(value)
    }
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnvValueVisitor)
    }
}

struct EnvValueVisitor;

impl<'de> Visitor<'de> for EnvValueVisitor {
    type Value = EnvValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(
            "a string, or { env = \"VARIABLE\" } to read a secret from codemode's environment",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<EnvValue, E> {
        Ok(EnvValue::Literal(v.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EnvValue, A::Error> {
        let mut var: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "env" || var.is_some() {
                return Err(de::Error::custom(format!(
                    "unexpected key `{key}`: a secret reference is {{ env = \"VARIABLE\" }}"
                )));
            }
            var = Some(map.next_value()?);
        }
        var.map(EnvValue::FromEnv)
            .ok_or_else(|| de::Error::custom("a secret reference is { env = \"VARIABLE\" }"))
    }
}

/// The child's environment, resolved now.
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    /// Every variable the child gets, in order.
    pub vars: Vec<(String, String)>,
    /// The values read from secret references, to scrub from what the model sees.
    pub secrets: Vec<String>,
}

/// Resolves the configured variables over the inherited ones; an unset secret reference is an
/// error naming the variable (never a value).
pub fn resolve(configured: &BTreeMap<String, EnvValue>) -> Result<ChildEnv, Cause> {
    let mut out = ChildEnv::default();
    for name in INHERITED_ENV {
        if configured.contains_key(*name) {
            continue;
        }
        if let Some(value) = std::env::var_os(name).and_then(|v| v.into_string().ok()) {
            out.vars.push(((*name).to_string(), value));
        }
    }
    for (name, value) in configured {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(Cause::BadEnvName(name.clone()));
        }
        let value = match value {
            EnvValue::Literal(v) => v.clone(),
            EnvValue::FromEnv(var) => {
                let secret = secret_env(var, &format!("the server's {name}"))?;
                out.secrets.push(secret.clone());
                secret
            }
        };
        if value.contains('\0') {
            return Err(Cause::BadEnvName(name.clone()));
        }
        out.vars.push((name.clone(), value));
    }
    Ok(out)
}

/// Reads an environment variable holding a secret.
pub fn secret_env(var: &str, what: &str) -> Result<String, Cause> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(Cause::MissingEnv {
            var: var.to_string(),
            what: what.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_or_reference() {
        let v: BTreeMap<String, EnvValue> =
            serde_json::from_str(r#"{"A": "ro", "B": {"env": "X"}}"#).unwrap();
        assert_eq!(v["A"], EnvValue::Literal("ro".into()));
        assert_eq!(v["B"], EnvValue::FromEnv("X".into()));
        let err = serde_json::from_str::<EnvValue>(r#"{"var": "X"}"#).unwrap_err();
        assert!(err.to_string().contains("unexpected key `var`"), "{err}");
        let err = serde_json::from_str::<EnvValue>("3").unwrap_err();
        assert!(err.to_string().contains("a string, or { env"), "{err}");
    }

    #[test]
    fn an_unset_reference_names_the_variable() {
        let configured = BTreeMap::from([(
            "TOKEN".to_string(),
            EnvValue::FromEnv("CODEMODE_TEST_NEVER_SET_CHILD_VAR".into()),
        )]);
        let err = resolve(&configured).unwrap_err().to_string();
        assert_eq!(
            err,
            "environment variable CODEMODE_TEST_NEVER_SET_CHILD_VAR (the server's TOKEN) is not set"
        );
    }

    #[test]
    fn configured_values_replace_inherited_ones() {
        let configured = BTreeMap::from([("PATH".to_string(), EnvValue::from("/only/here"))]);
        let env = resolve(&configured).unwrap();
        let paths: Vec<&str> = env
            .vars
            .iter()
            .filter(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(paths, ["/only/here"]);
        assert!(resolve(&BTreeMap::from([("A=B".to_string(), EnvValue::from("x"))])).is_err());
    }
}
