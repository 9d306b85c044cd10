//! Stand-in for the discovery catalogue until `crate::discovery::Catalog` lands.

use crate::connector::ToolSpec;
use crate::model::Snippet;
use serde::Serialize;
use serde_json::Value;

/// Connector facts for the catalogue.
pub struct ConnectorInfo {
    pub name: String,
    pub instructions: Option<String>,
    pub tools: Vec<ToolSpec>,
    pub hint: Option<String>,
}

/// Search results.
#[derive(Debug, Clone, Serialize)]
pub struct SearchOutput {
    pub results: Vec<Value>,
    pub total: usize,
    pub truncated: bool,
}

/// Describe results.
#[derive(Debug, Clone, Serialize)]
pub struct DescribeOutput {
    pub path: String,
    pub types: String,
    pub kind: String,
}

/// The model-facing tool.
#[derive(Debug, Clone, Serialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// The catalogue.
pub struct Catalog {
    names: Vec<String>,
}

impl Catalog {
    pub fn new(infos: Vec<ConnectorInfo>) -> Result<Catalog, String> {
        Ok(Catalog {
            names: infos.into_iter().map(|i| i.name).collect(),
        })
    }
    pub fn search(&self, _q: &str, _s: &[Snippet]) -> SearchOutput {
        SearchOutput {
            results: vec![],
            total: 0,
            truncated: false,
        }
    }
    pub fn describe(&self, t: &str, _s: &[Snippet]) -> Result<DescribeOutput, String> {
        Err(format!("unknown {t}"))
    }
    pub fn types(&self) -> String {
        String::new()
    }
    pub fn tool_definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "codemode".into(),
            description: format!("connectors: {}", self.names.join(", ")),
            input_schema: serde_json::json!({"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}),
        }
    }
}
