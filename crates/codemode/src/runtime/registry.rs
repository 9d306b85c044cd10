//! The connectors a runtime was built with, checked once, with compiled input validators.

use crate::connector::{Connector, ReplayPolicy, ToolSpec};
use crate::error::RuntimeError;
use crate::executor::Namespace;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// One tool, ready to call.
pub(crate) struct RegisteredTool {
    pub spec: ToolSpec,
    /// `connector.method`, as errors and notes name the call (spelled once, shared).
    pub path: Arc<str>,
    /// Compiled at the tool's first call: an API of thousands of operations would otherwise
    /// hold hundreds of megabytes of validators, most of them never used.
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

/// One connector and its tools by name.
pub(crate) struct RegisteredConnector {
    pub connector: Arc<dyn Connector>,
    pub tools: HashMap<String, RegisteredTool>,
    /// Tool names in the connector's order.
    pub order: Vec<String>,
}

/// Every connector by name, validated at build time.
pub(crate) struct Registry {
    pub connectors: HashMap<String, RegisteredConnector>,
    /// Connector names in configuration order.
    pub names: Vec<String>,
    /// Tools left out (an input schema that does not compile; in the stateless code tool, a
    /// tool that requires approval), one sentence each.
    pub warnings: Vec<String>,
    /// Connectors configured but unavailable (they failed to start), with why: each is still
    /// a global, whose every call throws saying so.
    pub unavailable: Vec<(String, String)>,
    /// What the sandbox exposes, worked out once (each pass takes a copy).
    namespaces: Vec<Namespace>,
}

impl Registry {
    /// Runs one lifecycle hook on every connector at once, logging and ignoring failures;
    /// `id` names the execution (or stateless call) in the log.
    pub(crate) async fn each_connector<'a, F>(&'a self, hook: &str, id: &str, call: F)
    where
        F: Fn(&'a dyn Connector) -> futures::future::BoxFuture<'a, Result<(), crate::ToolError>>,
    {
        let runs = self.names.iter().map(|name| {
            let run = call(self.connectors[name].connector.as_ref());
            async move {
                if let Err(e) = run.await {
                    tracing::warn!(connector = %name, execution = %id, error = %e, "{hook} failed");
                }
            }
        });
        futures::future::join_all(runs).await;
    }

    /// Checks names and policies (the first problem is an error that names it); a tool whose
    /// input schema does not compile is left out with a warning.
    pub fn build(
        connectors: Vec<Arc<dyn Connector>>,
        unavailable: Vec<(String, String)>,
        reserved: &[&str],
    ) -> Result<Registry, RuntimeError> {
        let mut registry = Registry {
            connectors: HashMap::new(),
            names: Vec::new(),
            warnings: Vec::new(),
            unavailable: Vec::new(),
            namespaces: Vec::new(),
        };
        for connector in connectors {
            let name = connector.name().to_string();
            check_connector_name(&name, reserved)?;
            if registry.connectors.contains_key(&name) {
                return Err(RuntimeError::InvalidConnector(format!(
                    "two connectors are named {name:?}; connector names must be unique"
                )));
            }
            let mut tools = HashMap::new();
            let mut order = Vec::new();
            for spec in connector.tools() {
                let Some(tool) = register_tool(&name, spec, &mut registry.warnings)? else {
                    continue;
                };
                if tools.contains_key(&tool.spec.name) {
                    return Err(RuntimeError::InvalidConnector(format!(
                        "{name} has two tools named {:?}",
                        tool.spec.name
                    )));
                }
                order.push(tool.spec.name.clone());
                tools.insert(tool.spec.name.clone(), tool);
            }
            registry.names.push(name.clone());
            registry.connectors.insert(
                name,
                RegisteredConnector {
                    connector,
                    tools,
                    order,
                },
            );
        }
        for (name, reason) in unavailable {
            check_connector_name(&name, reserved)?;
            let taken = registry.connectors.contains_key(&name)
                || registry.unavailable.iter().any(|(n, _)| *n == name);
            if taken {
                return Err(RuntimeError::InvalidConnector(format!(
                    "two connectors are named {name:?}; connector names must be unique"
                )));
            }
            registry.unavailable.push((name, reason));
        }
        registry.namespaces = registry.work_out_namespaces();
        Ok(registry)
    }

    /// Removes every tool `leave_out` picks (from calls, the sandbox's namespaces and the
    /// catalogue built after); returns, per connector in order, the names removed.
    pub fn leave_out(
        &mut self,
        leave_out: impl Fn(&ToolSpec) -> bool,
    ) -> Vec<(String, Vec<String>)> {
        let mut removed = Vec::new();
        for name in &self.names {
            let Some(c) = self.connectors.get_mut(name) else {
                continue;
            };
            let gone: Vec<String> = c
                .order
                .iter()
                .filter(|t| leave_out(&c.tools[*t].spec))
                .cloned()
                .collect();
            if gone.is_empty() {
                continue;
            }
            c.order.retain(|t| !gone.contains(t));
            for t in &gone {
                c.tools.remove(t);
            }
            removed.push((name.clone(), gone));
        }
        self.namespaces = self.work_out_namespaces();
        removed
    }

    /// Every connector's own [`warnings`](Connector::warnings), then the tools left out, one
    /// sentence each.
    pub fn all_warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .names
            .iter()
            .flat_map(|n| self.connectors[n].connector.warnings())
            .collect();
        out.extend(self.warnings.iter().cloned());
        out
    }

    /// The namespaces the sandbox exposes.
    pub fn namespaces(&self) -> Vec<Namespace> {
        self.namespaces.clone()
    }

    fn work_out_namespaces(&self) -> Vec<Namespace> {
        self.names
            .iter()
            .map(|name| {
                let c = &self.connectors[name];
                let positional = if c.connector.positional_args() {
                    c.order
                        .iter()
                        .map(|m| c.tools[m].spec.positional_params())
                        .collect()
                } else {
                    Vec::new()
                };
                Namespace {
                    name: name.clone(),
                    methods: c.order.clone(),
                    positional,
                    unavailable: None,
                }
            })
            .chain(self.unavailable.iter().map(|(name, reason)| Namespace {
                name: name.clone(),
                unavailable: Some(reason.clone()),
                ..Namespace::default()
            }))
            .collect()
    }

    /// Looks a tool up.
    pub fn tool(
        &self,
        connector: &str,
        method: &str,
    ) -> Option<(&RegisteredConnector, &RegisteredTool)> {
        let c = self.connectors.get(connector)?;
        Some((c, c.tools.get(method)?))
    }

    /// Why `connector.method` cannot be called, naming the closest existing names (or why the
    /// connector failed to start).
    pub fn not_a_method(&self, connector: &str, method: &str) -> String {
        let methods: Option<Vec<&str>> = self
            .connectors
            .get(connector)
            .map(|c| c.order.iter().map(String::as_str).collect());
        let unavailable = self
            .unavailable
            .iter()
            .find(|(n, _)| n == connector)
            .map(|(_, why)| why.as_str());
        let names: Vec<&str> = self
            .names
            .iter()
            .chain(self.unavailable.iter().map(|(n, _)| n))
            .map(String::as_str)
            .collect();
        crate::discovery::not_a_method(connector, method, methods.as_deref(), &names, unavailable)
    }

    /// The connectors of `recorded` this registry lacks.
    pub fn missing(&self, recorded: &[String]) -> Vec<String> {
        recorded
            .iter()
            .filter(|n| !self.connectors.contains_key(n.as_str()))
            .cloned()
            .collect()
    }
}

impl RegisteredTool {
    /// `value` cut down as the tool's `result_shape` says; a value that does not fit the shape
    /// is kept whole, and why is logged.
    pub fn shaped(&self, connector: &str, value: Value) -> Value {
        let Some(shape) = &self.spec.result_shape else {
            return value;
        };
        match shape.apply(&value) {
            Ok(shaped) => shaped,
            Err(why) => {
                tracing::warn!(
                    connector,
                    method = %self.spec.name,
                    "the configured result shape does not fit ({why}); the result is kept whole"
                );
                value
            }
        }
    }

    /// Validates `args`; the message says which field and why.
    pub fn validate(&self, connector: &str, args: &Value) -> Result<(), String> {
        let compiled = self.validator.get_or_init(|| {
            jsonschema::validator_for(&self.spec.input_schema).map_err(|e| e.to_string())
        });
        let validator = match compiled {
            Ok(validator) => validator,
            Err(e) => {
                return Err(format!(
                    "{connector}.{}: its input schema does not compile ({e}), so no input can be checked; the connector's schema must be fixed before this tool can be called",
                    self.spec.name
                ))
            }
        };
        if validator.is_valid(args) {
            return Ok(());
        }
        let problems: Vec<String> = validator
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let at = e.instance_path.to_string();
                if at.is_empty() {
                    format!("{e}")
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        Err(format!(
            "{connector}.{}: invalid input: {}. See codemode.describe(\"{connector}.{}\") for the input type.",
            self.spec.name,
            problems.join("; "),
            self.spec.name
        ))
    }
}

fn register_tool(
    connector: &str,
    spec: ToolSpec,
    warnings: &mut Vec<String>,
) -> Result<Option<RegisteredTool>, RuntimeError> {
    if !crate::discovery::is_valid_identifier(&spec.name) {
        return Err(RuntimeError::InvalidConnector(format!(
            "{connector}: tool name {:?} is not a valid JavaScript identifier; sanitise it (letters, digits, _ and $, not starting with a digit)",
            spec.name
        )));
    }
    if spec.requires_approval && spec.replay == ReplayPolicy::Reexecute {
        return Err(RuntimeError::InvalidConnector(format!(
            "{connector}.{}: a tool that requires approval cannot use replay = \"reexecute\" (an approved action would run again on every pass); keep replay = \"log\", or, only if running it again is harmless, set requires_approval = false",
            spec.name
        )));
    }
    match crate::schema_problem(&spec.input_schema) {
        None => Ok(Some(RegisteredTool {
            path: Arc::from(format!("{connector}.{}", spec.name)),
            spec,
            validator: OnceLock::new(),
        })),
        Some(e) => {
            let warning = format!(
                "connector `{connector}`: tool `{}` is left out: its input schema is not valid JSON Schema ({e}); fix the schema to use it",
                spec.name
            );
            tracing::warn!("{warning}");
            warnings.push(warning);
            Ok(None)
        }
    }
}

impl super::Runtime {
    /// What is degraded without stopping the runtime: every connector's own
    /// [`warnings`](Connector::warnings), then the tools the runtime left out (an input schema
    /// that does not compile), one sentence each; empty when all is well.
    pub fn warnings(&self) -> Vec<String> {
        self.inner.registry.all_warnings()
    }
}

fn check_connector_name(name: &str, reserved: &[&str]) -> Result<(), RuntimeError> {
    crate::discovery::check_connector_name(name)
        .map_err(|e| RuntimeError::InvalidConnector(e.to_string()))?;
    if reserved.contains(&name) {
        return Err(RuntimeError::InvalidConnector(format!(
            "connector name {name:?} would shadow the sandbox global of the same name; choose another"
        )));
    }
    Ok(())
}
