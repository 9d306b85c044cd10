//! `[connectors.NAME]`: one table per connector, its name the key, its kind `type`.

use codemode_mcp::McpConfig;
use codemode_openapi::OpenApiConfig;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One connector, tagged by `type`: the connector crate's own config type.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ConnectorConfig {
    /// An MCP server (`type = "mcp"`).
    Mcp(McpConfig),
    /// An OpenAPI 3.x document (`type = "openapi"`).
    Openapi(OpenApiConfig),
}

impl ConnectorConfig {
    /// The global name in the sandbox.
    pub fn name(&self) -> &str {
        match self {
            ConnectorConfig::Mcp(m) => &m.name,
            ConnectorConfig::Openapi(o) => &o.name,
        }
    }

    /// The hint shown in the tool description.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ConnectorConfig::Mcp(m) => m.hint.as_deref(),
            ConnectorConfig::Openapi(o) => o.hint.as_deref(),
        }
    }

    /// Calls of this connector in flight at once in one execution, when it sets its own cap.
    pub fn max_in_flight(&self) -> Option<usize> {
        match self {
            ConnectorConfig::Mcp(m) => m.max_in_flight,
            ConnectorConfig::Openapi(o) => o.max_in_flight,
        }
    }

    /// How long one call may take (`timeout_ms`): the runtime fails a call that takes longer.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(match self {
            ConnectorConfig::Mcp(m) => m.timeout_ms,
            ConnectorConfig::Openapi(o) => o.timeout_ms,
        })
    }

    fn name_mut(&mut self) -> &mut String {
        match self {
            ConnectorConfig::Mcp(m) => &mut m.name,
            ConnectorConfig::Openapi(o) => &mut o.name,
        }
    }
}

/// Reads the `connectors` table; each connector's name is its key.
pub(super) fn by_name<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, ConnectorConfig>, D::Error> {
    struct Table;
    impl<'de> Visitor<'de> for Table {
        type Value = BTreeMap<String, ConnectorConfig>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a table of connectors, [connectors.NAME]")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(name) = map.next_key::<String>()? {
                let connector = map.next_value_seed(One { name: &name })?;
                out.insert(name, connector);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Table)
}

/// One `[connectors.NAME]` table.
struct One<'a> {
    name: &'a str,
}

impl<'de> DeserializeSeed<'de> for One<'_> {
    type Value = ConnectorConfig;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ConnectorConfig, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for One<'_> {
    type Value = ConnectorConfig;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a table [connectors.{}] with `type`", self.name)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<ConnectorConfig, A::Error> {
        let kind = match self.name {
            "mcp" | "openapi" => self.name,
            _ => "mcp\" or \"openapi",
        };
        Err(de::Error::custom(format!(
            "`[[connectors.{0}]]` (an array of tables) is the old shape: write one table per connector, `[connectors.NAME]` with `type = \"{kind}\"`, its name the table key instead of a `name` key",
            self.name
        )))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ConnectorConfig, A::Error> {
        let name = self.name;
        let mut c = ConnectorConfig::deserialize(MapAccessDeserializer::new(map))
            .map_err(|e| de::Error::custom(format!("connectors.{name}: {e}")))?;
        let given = c.name_mut();
        if !given.is_empty() && given != name {
            return Err(de::Error::custom(format!(
                "connectors.{name}: `name = {given:?}` differs from the table's key; the key is the name: drop `name`, or write [connectors.{given}]"
            )));
        }
        *given = name.to_string();
        Ok(c)
    }
}
