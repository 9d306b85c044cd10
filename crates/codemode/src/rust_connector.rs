//! Connectors written in Rust: tools as async closures, in the same process.

use crate::connector::{
    CallContext, Connector, ExecutionEndStatus, PassEndStatus, ReplayPolicy, ToolError, ToolSpec,
};
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

type ExecuteFn =
    Arc<dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;
type RevertFn = Arc<
    dyn Fn(Value, Value, CallContext) -> BoxFuture<'static, Result<(), ToolError>> + Send + Sync,
>;
type PassEndFn =
    Arc<dyn Fn(String, PassEndStatus) -> BoxFuture<'static, Result<(), ToolError>> + Send + Sync>;
type DisposeFn = Arc<
    dyn Fn(String, ExecutionEndStatus) -> BoxFuture<'static, Result<(), ToolError>> + Send + Sync,
>;

/// One tool of a [`RustConnector`]: its spec and its closures.
///
/// Approval fails closed: an explicit [`requires_approval`](RustTool::requires_approval)
/// wins; otherwise a [`read_only`](RustTool::read_only) tool runs at once and every other tool
/// waits for a person's approval.
///
/// ```
/// use codemode::{Connector, RustConnector, RustTool};
/// use serde_json::json;
///
/// let files = RustConnector::new("files")
///     .tool(RustTool::new("read", |_args, _ctx| async { Ok(json!("text")) }).read_only())
///     .tool(RustTool::new("write", |_args, _ctx| async { Ok(json!(null)) }))
///     .tool(RustTool::new("touch", |_args, _ctx| async { Ok(json!(null)) }).requires_approval(false));
/// let needs_approval: Vec<(String, bool)> =
///     files.tools().into_iter().map(|t| (t.name, t.requires_approval)).collect();
/// assert_eq!(
///     needs_approval,
///     [("read".into(), false), ("write".into(), true), ("touch".into(), false)]
/// );
/// ```
#[derive(Clone)]
pub struct RustTool {
    spec: ToolSpec,
    approval: Option<bool>,
    execute: ExecuteFn,
    revert: Option<RevertFn>,
}

impl RustTool {
    /// A tool that runs `handler`; unless marked read-only or given a policy, it requires approval.
    pub fn new<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        RustTool {
            spec: ToolSpec::new(name),
            approval: None,
            execute: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
            revert: None,
        }
    }

    /// Sets the description the model reads.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.spec.description = Some(text.into());
        self
    }

    /// Sets the JSON Schema its input is validated against.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.spec.input_schema = schema;
        self
    }

    /// Sets the JSON Schema of its result.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.spec.output_schema = Some(schema);
        self
    }

    /// Marks it as changing nothing: safe to run twice, and no approval by default.
    pub fn read_only(mut self) -> Self {
        self.spec.read_only = true;
        self
    }

    /// Says explicitly whether each call needs a person's approval.
    pub fn requires_approval(mut self, required: bool) -> Self {
        self.approval = Some(required);
        self
    }

    /// Runs it again on every pass instead of replaying a stored result.
    pub fn reexecute(mut self) -> Self {
        self.spec.replay = ReplayPolicy::Reexecute;
        self
    }

    /// Gives it a compensation for rollback: `revert(args, result, ctx)`.
    pub fn revert<F, Fut>(mut self, revert: F) -> Self
    where
        F: Fn(Value, Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.revert = Some(Arc::new(move |a, r, c| Box::pin(revert(a, r, c))));
        self
    }

    fn resolved_spec(&self) -> ToolSpec {
        let mut spec = self.spec.clone();
        spec.requires_approval = self.approval.unwrap_or(!spec.read_only);
        spec.has_revert = self.revert.is_some();
        spec
    }
}

/// A connector whose tools are Rust closures.
///
/// Give it a name (the global the model's code sees) and [`RustTool`]s, then add it to a
/// runtime with [`RuntimeBuilder::connector`](crate::RuntimeBuilder::connector) or to a
/// [`CodeTool`](crate::CodeTool). A tool with a [`revert`](RustTool::revert) can be undone by
/// [`Runtime::rollback`](crate::Runtime::rollback), which passes it the recorded arguments and
/// result.
///
/// ```
/// use codemode::{CallContext, Connector, RustConnector, RustTool};
/// use serde_json::{json, Value};
/// use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), codemode::ToolError> {
/// let total = Arc::new(AtomicI64::new(0));
/// let (up, down) = (total.clone(), total.clone());
/// let counter = RustConnector::new("counter")
///     .instructions("A shared counter.")
///     .tool(
///         RustTool::new("add", move |args: Value, _ctx| {
///             let up = up.clone();
///             async move {
///                 let n = args["n"].as_i64().unwrap_or(0);
///                 Ok(json!(up.fetch_add(n, SeqCst) + n))
///             }
///         })
///         .description("Adds n to the counter and returns the new total.")
///         .input_schema(json!({
///             "type": "object",
///             "properties": { "n": { "type": "integer" } },
///             "required": ["n"]
///         }))
///         .requires_approval(false)
///         .revert(move |args: Value, _result, _ctx| {
///             let down = down.clone();
///             async move {
///                 down.fetch_sub(args["n"].as_i64().unwrap_or(0), SeqCst);
///                 Ok(())
///             }
///         }),
///     );
/// assert!(counter.tools()[0].has_revert);
///
/// let ctx = CallContext { execution_id: "e1".into(), seq: 0 };
/// let result = counter.execute("add", json!({ "n": 5 }), ctx.clone()).await?;
/// assert_eq!(result, json!(5));
/// counter.revert("add", json!({ "n": 5 }), result, ctx).await?;
/// assert_eq!(total.load(SeqCst), 0);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RustConnector {
    name: String,
    instructions: Option<String>,
    tools: Vec<RustTool>,
    on_pass_end: Option<PassEndFn>,
    dispose: Option<DisposeFn>,
    positional: bool,
    types: Option<String>,
}

impl RustConnector {
    /// An empty connector with this global name.
    pub fn new(name: impl Into<String>) -> Self {
        RustConnector {
            name: name.into(),
            instructions: None,
            tools: Vec::new(),
            on_pass_end: None,
            dispose: None,
            positional: false,
            types: None,
        }
    }

    /// Makes the model call its methods with positional arguments, `files.read("/a")`, in the
    /// order of each input schema's properties, required ones first.
    pub fn positional_args(mut self) -> Self {
        self.positional = true;
        self
    }

    /// Sets hand-written TypeScript declarations shown instead of the generated ones; they
    /// must include `declare const <name>: { … }`.
    pub fn types(mut self, text: impl Into<String>) -> Self {
        self.types = Some(text.into());
        self
    }

    /// Sets the guidance the model reads.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: RustTool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Sets the hook run after every pass.
    pub fn on_pass_end<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(String, PassEndStatus) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.on_pass_end = Some(Arc::new(move |id, s| Box::pin(hook(id, s))));
        self
    }

    /// Sets the hook run after a terminal transition.
    pub fn on_dispose<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(String, ExecutionEndStatus) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.dispose = Some(Arc::new(move |id, s| Box::pin(hook(id, s))));
        self
    }

    fn find(&self, method: &str) -> Result<&RustTool, ToolError> {
        self.tools
            .iter()
            .find(|t| t.spec.name == method)
            .ok_or_else(|| ToolError(format!("{} has no method {method}", self.name)))
    }
}

#[async_trait]
impl Connector for RustConnector {
    fn name(&self) -> &str {
        &self.name
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(RustTool::resolved_spec).collect()
    }

    fn positional_args(&self) -> bool {
        self.positional
    }

    fn types(&self) -> Option<String> {
        self.types.clone()
    }

    async fn execute(
        &self,
        method: &str,
        args: Value,
        ctx: CallContext,
    ) -> Result<Value, ToolError> {
        let run = self.find(method)?.execute.clone();
        run(args, ctx).await
    }

    async fn revert(
        &self,
        method: &str,
        args: Value,
        result: Value,
        ctx: CallContext,
    ) -> Result<(), ToolError> {
        match &self.find(method)?.revert {
            Some(revert) => revert(args, result, ctx).await,
            None => Err(ToolError(format!("{}.{method} has no revert", self.name))),
        }
    }

    async fn on_pass_end(
        &self,
        execution_id: &str,
        status: PassEndStatus,
    ) -> Result<(), ToolError> {
        match &self.on_pass_end {
            Some(hook) => hook(execution_id.to_string(), status).await,
            None => Ok(()),
        }
    }

    async fn dispose_execution(
        &self,
        execution_id: &str,
        status: ExecutionEndStatus,
    ) -> Result<(), ToolError> {
        match &self.dispose {
            Some(hook) => hook(execution_id.to_string(), status).await,
            None => Ok(()),
        }
    }
}
