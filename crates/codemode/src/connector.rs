//! Connectors: named sets of tools the sandbox sees as one global each.

use async_trait::async_trait;
use serde_json::Value;
use std::fmt;

/// Whether a tool's result is kept for replay or the tool runs again on every pass; in
/// configuration, `replay = "log"` or `replay = "reexecute"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayPolicy {
    /// Record the result; later passes return it without running the tool.
    #[default]
    Log,
    /// Record only seq and arguments; run the tool again on every pass.
    Reexecute,
}

/// Everything the runtime and the model need to know about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The method name the sandbox sees (a valid identifier).
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// JSON Schema for its one argument (an open object when absent).
    pub input_schema: Value,
    /// JSON Schema for its result, when known.
    pub output_schema: Option<Value>,
    /// Whether a person must approve each call.
    pub requires_approval: bool,
    /// The tool changes nothing, so running it twice is harmless.
    pub read_only: bool,
    /// How replay treats it.
    pub replay: ReplayPolicy,
    /// Whether the connector can revert it.
    pub has_revert: bool,
    /// The HTTP operation behind it (OpenAPI), which search matches intent against.
    pub http: Option<HttpOperation>,
    /// How its results are cut down before the code sees them (from configuration).
    pub result_shape: Option<crate::shape::ResultShape>,
}

/// The HTTP method and path template of a tool that is one HTTP operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOperation {
    /// The method, upper case (`GET`, `POST`, …).
    pub method: String,
    /// The path template, as in the API description (`/repos/{owner}/{repo}/forks`).
    pub path: String,
}

impl ToolSpec {
    /// A tool with an open-object input that, failing closed, requires approval.
    pub fn new(name: impl Into<String>) -> Self {
        ToolSpec {
            name: name.into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            requires_approval: true,
            read_only: false,
            replay: ReplayPolicy::Log,
            has_revert: false,
            http: None,
            result_shape: None,
        }
    }
}

impl ToolSpec {
    /// How positional arguments map onto this tool's input properties: required properties
    /// first, then optional ones, each in schema order; `None` when the input declares none.
    pub fn positional_params(&self) -> Option<crate::executor::PositionalParams> {
        let properties = self.input_schema.get("properties")?.as_object()?;
        if properties.is_empty() {
            return None;
        }
        let required: Vec<&str> = self
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let is_required = |name: &String| required.contains(&name.as_str());
        let mut names: Vec<String> = properties
            .keys()
            .filter(|n| is_required(n))
            .cloned()
            .collect();
        let count = names.len();
        names.extend(properties.keys().filter(|n| !is_required(n)).cloned());
        Some(crate::executor::PositionalParams {
            names,
            required: count,
        })
    }
}

/// Identifies one call: together the two fields are an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    /// The execution making the call.
    pub execution_id: String,
    /// The call's place in that execution's log.
    pub seq: u64,
}

impl CallContext {
    /// `"{execution_id}:{seq}"`: the same on every re-run of this call.
    pub fn idempotency_key(&self) -> String {
        format!("{}:{}", self.execution_id, self.seq)
    }
}

/// How a pass ended, for [`Connector::on_pass_end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassEndStatus {
    /// The code returned.
    Completed,
    /// The code failed.
    Error,
    /// The pass stopped at an action that needs approval.
    Paused,
    /// The execution was cancelled while the pass ran.
    Cancelled,
}

impl PassEndStatus {
    /// The status name, as in an execution record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Error => "error",
            Self::Paused => "paused",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The terminal status an execution reached, for [`Connector::dispose_execution`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionEndStatus {
    /// Completed.
    Completed,
    /// Failed or expired while running.
    Error,
    /// Rejected or expired while paused.
    Rejected,
    /// Rolled back.
    RolledBack,
    /// Cancelled while running.
    Cancelled,
}

impl ExecutionEndStatus {
    /// The status name, as in an execution record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Error => "error",
            Self::Rejected => "rejected",
            Self::RolledBack => "rolled_back",
            Self::Cancelled => "cancelled",
        }
    }
}

/// An error a tool reports; its message reaches the model's code as a thrown `Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        ToolError(s)
    }
}

impl From<&str> for ToolError {
    fn from(s: &str) -> Self {
        ToolError(s.to_string())
    }
}

/// A named set of tools: an MCP server, an OpenAPI API, or tools written in Rust.
///
/// Tools written in Rust are easiest as a [`RustConnector`](crate::RustConnector); implement
/// this trait for a connector that learns its tools at run time or speaks another protocol.
/// The runtime reads [`tools`](Connector::tools) once when it is built, validates each call's
/// argument against the tool's `input_schema` before [`execute`](Connector::execute) runs, and
/// calls [`revert`](Connector::revert) only for tools whose spec sets `has_revert`.
///
/// ```
/// use async_trait::async_trait;
/// use codemode::{CallContext, CodeOutcome, CodeTool, Connector, ToolError, ToolSpec};
/// use serde_json::{json, Value};
/// use std::sync::Arc;
///
/// /// Returns its argument.
/// struct Echo;
///
/// #[async_trait]
/// impl Connector for Echo {
///     fn name(&self) -> &str {
///         "echo"
///     }
///
///     fn tools(&self) -> Vec<ToolSpec> {
///         let mut say = ToolSpec::new("say");
///         say.description = Some("Returns its input.".into());
///         say.read_only = true;
///         say.requires_approval = false;
///         vec![say]
///     }
///
///     async fn execute(&self, method: &str, args: Value, _ctx: CallContext) -> Result<Value, ToolError> {
///         match method {
///             "say" => Ok(args),
///             other => Err(ToolError::new(format!("echo has no method {other}"))),
///         }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), codemode::RuntimeError> {
/// let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
/// let tool = CodeTool::builder(executor).connector(Echo).build()?;
/// let outcome = tool.call("async () => echo.say({ hi: 1 })").await;
/// assert_eq!(outcome, CodeOutcome::Completed { result: json!({ "hi": 1 }), logs: vec![] });
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Connector: Send + Sync {
    /// The global name in the sandbox (a valid identifier, not `codemode`).
    fn name(&self) -> &str;

    /// Guidance for the model, shown by `codemode.describe(name)`.
    fn instructions(&self) -> Option<String> {
        None
    }

    /// The tools; read once when a runtime is built.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Whether the model's code calls its methods with positional arguments
    /// (`state.readFile("/a")`, the input's properties in order, required ones first) instead
    /// of one object (`state.readFile({ path: "/a" })`); the log records the object either way.
    fn positional_args(&self) -> bool {
        false
    }

    /// Hand-written TypeScript declarations shown instead of the ones generated from the
    /// tools' schemas (they must declare `declare const <name>: { … }` themselves).
    fn types(&self) -> Option<String> {
        None
    }

    /// What is degraded without stopping the connector (tools renamed or left out, unused
    /// configuration), one sentence each, for the host to report; empty when all is well.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Runs one tool. `ctx` identifies the call across re-runs.
    async fn execute(
        &self,
        method: &str,
        args: Value,
        ctx: CallContext,
    ) -> Result<Value, ToolError>;

    /// Compensates one applied call; only called for tools with `has_revert`.
    async fn revert(
        &self,
        method: &str,
        args: Value,
        result: Value,
        ctx: CallContext,
    ) -> Result<(), ToolError> {
        let _ = (args, result, ctx);
        Err(ToolError(format!("{method} has no revert")))
    }

    /// Called after every pass, paused ones included; must be idempotent.
    async fn on_pass_end(
        &self,
        execution_id: &str,
        status: PassEndStatus,
    ) -> Result<(), ToolError> {
        let _ = (execution_id, status);
        Ok(())
    }

    /// Called after a terminal transition, never after a pause; must be idempotent.
    async fn dispose_execution(
        &self,
        execution_id: &str,
        status: ExecutionEndStatus,
    ) -> Result<(), ToolError> {
        let _ = (execution_id, status);
        Ok(())
    }
}
