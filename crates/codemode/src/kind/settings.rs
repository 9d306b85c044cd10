//! The settings every connector kind shares, read from its table in one place.

use super::error::KindError;
use crate::policy::{ApprovalPolicy, RevertRule, ToolOverride};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What every connector's table may say whatever its kind: its name, how it is shown, its
/// call limits, and (for kinds that take it) its approval policy. A kind's configuration
/// type may hold it (`#[serde(flatten)]`) so that it reads the shared keys when deserialized
/// on its own; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct ConnectorSettings {
    /// The global name in the sandbox (in configuration, the key of the connector's table).
    pub name: String,
    /// A one-line hint beside the connector's name in the tool description.
    pub hint: Option<String>,
    /// Calls of this connector in flight at once in one execution (default: the runtime's).
    pub max_in_flight: Option<usize>,
    /// How long one call may take, in milliseconds (default: the kind's).
    pub timeout_ms: Option<u64>,
    /// Which tools need approval.
    pub approval: ApprovalPolicy,
    /// Compensating calls for rollback.
    pub reverts: Vec<RevertRule>,
    /// Per-tool settings, by method or original name.
    pub tools: BTreeMap<String, ToolOverride>,
}

/// The policy keys, which only kinds that take a policy accept.
pub(super) const POLICY_KEYS: [&str; 3] = ["approval", "reverts", "tools"];

impl ConnectorSettings {
    /// Settings with defaults for everything but the name.
    pub fn new(name: impl Into<String>) -> Self {
        ConnectorSettings {
            name: name.into(),
            ..ConnectorSettings::default()
        }
    }

    /// The policy keys set to something other than their default, as written.
    pub fn policy_keys(&self) -> Vec<&'static str> {
        let set = [
            self.approval != ApprovalPolicy::default(),
            !self.reverts.is_empty(),
            !self.tools.is_empty(),
        ];
        POLICY_KEYS
            .into_iter()
            .zip(set)
            .filter_map(|(key, set)| set.then_some(key))
            .collect()
    }

    /// Refuses call caps and call timeouts of 0, naming the key.
    pub fn check(&self) -> Result<(), KindError> {
        let zero = |key: &str, what: &str| KindError::Zero {
            key: format!("connectors.{}.{key}", self.name),
            what: what.to_string(),
        };
        if self.max_in_flight == Some(0) {
            return Err(zero("max_in_flight", "let no call run"));
        }
        if self.timeout_ms == Some(0) {
            return Err(zero("timeout_ms", "fail every call"));
        }
        Ok(())
    }

    /// Takes the shared keys out of the table of the connector `name`, leaving the kind's
    /// own; `name` in the table must be the key itself.
    pub(super) fn take(name: &str, table: &mut Map<String, Value>) -> Result<Self, KindError> {
        let given: Option<String> = take_key(name, table, "name")?;
        if let Some(given) = given.filter(|g| !g.is_empty() && g != name) {
            return Err(KindError::Invalid {
                key: format!("connectors.{name}"),
                message: format!("`name = {given:?}` differs from the table's key; the key is the name: drop `name`, or make the table connectors.{given}"),
            });
        }
        let settings = ConnectorSettings {
            name: name.to_string(),
            hint: take_key(name, table, "hint")?,
            max_in_flight: take_key(name, table, "max_in_flight")?,
            timeout_ms: take_key(name, table, "timeout_ms")?,
            approval: take_key(name, table, "approval")?.unwrap_or_default(),
            reverts: take_key(name, table, "reverts")?.unwrap_or_default(),
            tools: take_key(name, table, "tools")?.unwrap_or_default(),
        };
        settings.check()?;
        Ok(settings)
    }
}

/// Removes `key` from the table and reads it; an error names `connectors.NAME.KEY`.
fn take_key<T: DeserializeOwned>(
    name: &str,
    table: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<T>, KindError> {
    let Some(value) = table.remove(key) else {
        return Ok(None);
    };
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| KindError::Invalid {
            key: format!("connectors.{name}.{key}"),
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("a test table is an object"),
        }
    }

    #[test]
    fn shared_keys_are_taken_and_the_rest_left() {
        let mut t = table(json!({
            "hint": "h", "timeout_ms": 5, "max_in_flight": 2,
            "approval": {"allow": ["a*"]}, "spec": "s.json"
        }));
        let s = ConnectorSettings::take("api", &mut t).unwrap();
        assert_eq!(s.name, "api");
        assert_eq!(s.hint.as_deref(), Some("h"));
        assert_eq!((s.timeout_ms, s.max_in_flight), (Some(5), Some(2)));
        assert_eq!(s.approval.allow, ["a*"]);
        assert_eq!(s.policy_keys(), ["approval"]);
        assert_eq!(t, table(json!({"spec": "s.json"})));
    }

    #[test]
    fn a_bad_shared_key_is_named() {
        let mut t = table(json!({"timeout_ms": "soon"}));
        let e = ConnectorSettings::take("api", &mut t)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("connectors.api.timeout_ms: "), "{e}");
        let mut t = table(json!({"max_in_flight": 0}));
        let e = ConnectorSettings::take("api", &mut t)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("`connectors.api.max_in_flight = 0` would let no call run"),
            "{e}"
        );
        let mut t = table(json!({"name": "other"}));
        let e = ConnectorSettings::take("api", &mut t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the table connectors.other"), "{e}");
        let mut t = table(json!({"name": "api"}));
        assert!(ConnectorSettings::take("api", &mut t).is_ok());
    }
}
