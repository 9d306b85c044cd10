//! The stateless code tool: sandboxed code over connectors, with no store, no log, no
//! replay and no approvals.
//!
//! [`CodeTool`] is for hosts that only want the model to write code against their tools. It
//! offers the same sandbox, the same generated types, the same tool description and the same
//! `codemode.search` / `codemode.describe` as the durable [`Runtime`](crate::Runtime), and
//! validates tool arguments the same way. What it cannot do is pause: a tool that requires
//! approval is left out when the code tool is built (it is not a method in the sandbox, not in
//! the types, search or describe), as the reference's `createCodeTool` leaves out tools whose
//! `needsApproval` is set, and [`CodeTool::warnings`] names each connector's left-out tools and
//! why. `codemode.step(name, fn)` runs `fn` once and records nothing; `codemode.run` has no
//! saved snippets to run and throws.
//!
//! The description is the runtime's: generated within a token budget
//! ([`CodeToolBuilder::max_description_tokens`]), or a template of the host's
//! ([`CodeToolBuilder::description`], the reference's `createCodeTool({ description })`) where
//! `{{types}}` becomes every declaration and `{{example}}` an example program; any other
//! placeholder makes [`CodeToolBuilder::build`] fail naming it and the allowed ones.
//!
//! ```
//! use codemode::{CodeOutcome, CodeTool, RustConnector, RustTool};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), codemode::RuntimeError> {
//! let weather = RustConnector::new("weather").tool(
//!     RustTool::new("forecast", |args, _ctx| async move {
//!         Ok(json!({ "city": args["city"], "sky": "sunny" }))
//!     })
//!     .read_only(),
//! );
//! let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
//! let tool = CodeTool::builder(executor).connector(weather).build()?;
//!
//! let outcome = tool
//!     .call(r#"async () => (await weather.forecast({ city: "Paris" })).sky"#)
//!     .await;
//! assert_eq!(outcome, CodeOutcome::Completed { result: json!("sunny"), logs: vec![] });
//! # Ok(())
//! # }
//! ```

use crate::connector::{CallContext, Connector, ExecutionEndStatus, PassEndStatus};
use crate::discovery::{Catalog, ConnectorInfo, DescribeOutput, SearchOutput, ToolDefinition};
use crate::error::RuntimeError;
use crate::error_code::ErrorCode;
use crate::executor::SDK_NAMESPACE;
use crate::executor::{ExecuteRequest, Executor, Host, HostCall, HostReply, PassEnd};
use crate::runtime::registry::Registry;
use crate::runtime::{ToolOptions, TransformResult};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What one [`CodeTool::call`] produced: the result or the error, with the console output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CodeOutcome {
    /// The code returned.
    Completed {
        /// The returned value as the model should see it (after `transform_result`).
        result: Value,
        /// Console output.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        logs: Vec<String>,
    },
    /// The code threw, did not parse, or hit a sandbox limit.
    Error {
        /// What went wrong and where, in the model's own lines.
        error: String,
        /// What kind of failure it was.
        #[serde(default)]
        code: ErrorCode,
        /// Whether running the same code again may succeed (`code`'s answer).
        #[serde(default)]
        retryable: bool,
        /// Console output.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        logs: Vec<String>,
    },
}

/// Builds a [`CodeTool`].
pub struct CodeToolBuilder {
    executor: Arc<dyn Executor>,
    connectors: Vec<Arc<dyn Connector>>,
    hints: Vec<(String, String)>,
    transform_result: Option<TransformResult>,
    tool_options: ToolOptions,
}

impl CodeToolBuilder {
    /// Adds a connector.
    pub fn connector(mut self, connector: impl Connector + 'static) -> Self {
        self.connectors.push(Arc::new(connector));
        self
    }

    /// Adds a shared connector.
    pub fn connector_arc(mut self, connector: Arc<dyn Connector>) -> Self {
        self.connectors.push(connector);
        self
    }

    /// A one-line hint for a connector, shown in the tool description.
    pub fn hint(mut self, connector: impl Into<String>, hint: impl Into<String>) -> Self {
        self.hints.push((connector.into(), hint.into()));
        self
    }

    /// A description replacing the generated one: `{{types}}` becomes every declaration and
    /// `{{example}}` an example program; any other placeholder is an error at
    /// [`CodeToolBuilder::build`].
    pub fn description(mut self, template: impl Into<String>) -> Self {
        self.tool_options.description = Some(template.into());
        self
    }

    /// The token budget of the generated description (default
    /// [`crate::discovery::DEFAULT_DESCRIPTION_TOKENS`]): connectors' declarations are put in,
    /// each whole, only while the description fits it.
    pub fn max_description_tokens(mut self, tokens: usize) -> Self {
        self.tool_options.max_description_tokens = Some(tokens);
        self
    }

    /// Every description option at once (those set before are replaced).
    pub fn tool_options(mut self, options: ToolOptions) -> Self {
        self.tool_options = options;
        self
    }

    /// Reshapes completed results for the model, e.g. with [`crate::truncate_result`].
    pub fn transform_result(
        mut self,
        transform: impl Fn(Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.transform_result = Some(crate::runtime::transform::from_sync(transform));
        self
    }

    /// Reshapes completed results with an async function (see
    /// [`crate::RuntimeBuilder::transform_result_async`]).
    pub fn transform_result_async<F, Fut>(mut self, transform: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, String>> + Send + 'static,
    {
        self.transform_result = Some(crate::runtime::transform::from_async(transform));
        self
    }

    /// Checks the connectors (names, schemas) and the description template, leaves out the
    /// tools that require approval (see [`CodeTool::warnings`]) and builds the code tool.
    pub fn build(self) -> Result<CodeTool, RuntimeError> {
        let mut registry = Registry::build(
            self.connectors,
            Vec::new(),
            self.executor.reserved_globals(),
        )?;
        leave_out_approval_tools(&mut registry);
        let catalog = crate::runtime::sdk::build_catalog(&registry, &self.hints)?;
        let definition = crate::runtime::sdk::tool_definition(&catalog, &self.tool_options)?;
        Ok(CodeTool {
            inner: Arc::new(Inner {
                executor: self.executor,
                registry,
                catalog,
                definition,
                transform_result: self.transform_result,
            }),
        })
    }
}

/// A code tool without durable state: each call runs the code once in a fresh sandbox.
#[derive(Clone)]
pub struct CodeTool {
    inner: Arc<Inner>,
}

struct Inner {
    executor: Arc<dyn Executor>,
    registry: Registry,
    catalog: Catalog,
    /// The tool as the builder's description options made it.
    definition: ToolDefinition,
    transform_result: Option<TransformResult>,
}

impl CodeTool {
    /// Starts building a code tool over an executor.
    pub fn builder(executor: Arc<dyn Executor>) -> CodeToolBuilder {
        CodeToolBuilder {
            executor,
            connectors: Vec::new(),
            hints: Vec::new(),
            transform_result: None,
            tool_options: ToolOptions::default(),
        }
    }

    /// The tool to hand the model: name, description and input schema.
    pub fn tool(&self) -> ToolDefinition {
        self.inner.definition.clone()
    }

    /// What is degraded without stopping the code tool, one sentence each: every connector's
    /// own warnings, the tools left out because their input schema does not compile, and, per
    /// connector, the tools left out because they require approval (a stateless call cannot
    /// pause for a person). Empty when all is well.
    pub fn warnings(&self) -> Vec<String> {
        self.inner.registry.all_warnings()
    }

    /// The configured connector names.
    pub fn connector_names(&self) -> &[String] {
        &self.inner.registry.names
    }

    /// The connectors with their instructions, hints and tool specs.
    pub fn connectors(&self) -> &[ConnectorInfo] {
        self.inner.catalog.connectors()
    }

    /// Ranked search over connector methods, as `codemode.search` answers.
    pub fn search(&self, query: &str) -> SearchOutput {
        self.inner.catalog.search(query, &[])
    }

    /// TypeScript declarations for a connector or `connector.method`, as `codemode.describe`
    /// answers; `Err` says why the target is unknown.
    pub fn describe(&self, target: &str) -> Result<DescribeOutput, String> {
        self.inner.catalog.describe(target, &[])
    }

    /// Every declaration the sandbox offers.
    pub fn types(&self) -> String {
        self.inner.catalog.types()
    }

    /// Runs model code once. Anything the code did wrong comes back as [`CodeOutcome::Error`].
    pub async fn call(&self, code: &str) -> CodeOutcome {
        let inner = &self.inner;
        let call_id = uuid::Uuid::new_v4().to_string();
        let host = Arc::new(CallHost {
            tool: self.clone(),
            call_id: call_id.clone(),
            next_seq: AtomicU64::new(0),
            thrown: std::sync::Mutex::new(Vec::new()),
        });
        let request = ExecuteRequest {
            code: code.to_string(),
            namespaces: inner.registry.namespaces(),
            clock: Default::default(),
        };
        let result = inner.executor.execute(request, host.clone()).await;
        let thrown = host.thrown.lock().map(|t| t.clone()).unwrap_or_default();
        let mut logs = result.logs;
        let outcome = match result.end {
            PassEnd::Returned(value) => {
                let (result, note) =
                    crate::runtime::transform::shown(inner.transform_result.as_ref(), value).await;
                logs.extend(note);
                CodeOutcome::Completed { result, logs }
            }
            PassEnd::Failed(error) => {
                let code = ErrorCode::of_error(&error, &thrown);
                CodeOutcome::Error {
                    error,
                    code,
                    retryable: code.retryable(),
                    logs,
                }
            }
            PassEnd::Aborted => CodeOutcome::Error {
                error: "the sandbox stopped the code without a reason".into(),
                code: ErrorCode::Internal,
                retryable: ErrorCode::Internal.retryable(),
                logs,
            },
        };
        let (pass, end) = match outcome {
            CodeOutcome::Completed { .. } => {
                (PassEndStatus::Completed, ExecutionEndStatus::Completed)
            }
            CodeOutcome::Error { .. } => (PassEndStatus::Error, ExecutionEndStatus::Error),
        };
        self.inner
            .registry
            .each_connector("on_pass_end", &call_id, |c| c.on_pass_end(&call_id, pass))
            .await;
        self.inner
            .registry
            .each_connector("dispose_execution", &call_id, |c| {
                c.dispose_execution(&call_id, end)
            })
            .await;
        outcome
    }
}

/// Leaves out every tool that would need a person's approval (a stateless call cannot pause),
/// with a warning per connector naming them.
fn leave_out_approval_tools(registry: &mut Registry) {
    for (connector, tools) in registry.leave_out(|spec| spec.requires_approval) {
        let warning = format!(
            "connector `{connector}`: {} left out of the code tool: {} approval, and a stateless code tool cannot pause for a person. If a tool is safe to run without one, mark it read-only or give it an explicit policy (for a RustTool: .read_only() or .requires_approval(false)); otherwise use a durable Runtime, which pauses for approval",
            tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", "),
            if tools.len() == 1 { "it requires" } else { "they require" }
        );
        tracing::warn!("{warning}");
        registry.warnings.push(warning);
    }
}

/// The host side of one stateless call.
struct CallHost {
    tool: CodeTool,
    call_id: String,
    next_seq: AtomicU64,
    /// What the host threw into the code, with its code.
    thrown: std::sync::Mutex<Vec<(ErrorCode, String)>>,
}

impl Host for CallHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        Box::pin(async move {
            if call.namespace == SDK_NAMESPACE {
                let reply = self.sdk_call(&call);
                if let HostReply::Throw(message) = &reply {
                    let code =
                        ErrorCode::of_host_throw(SDK_NAMESPACE, &call.method, false, message);
                    self.note_thrown(code, message);
                }
                return reply;
            }
            self.connector_call(call).await
        })
    }
}

impl CallHost {
    async fn connector_call(&self, call: HostCall) -> HostReply {
        let registry = &self.tool.inner.registry;
        let Some((registered, tool)) = registry.tool(&call.namespace, &call.method) else {
            let message = registry.not_a_method(&call.namespace, &call.method);
            self.note_thrown(ErrorCode::NotFound, &message);
            return HostReply::Throw(message);
        };
        if let Err(message) = tool.validate(&call.namespace, &call.args) {
            self.note_thrown(ErrorCode::Schema, &message);
            return HostReply::Throw(message);
        }
        let ctx = CallContext {
            execution_id: self.call_id.clone(),
            seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
        };
        match registered
            .connector
            .execute(&call.method, call.args, ctx)
            .await
        {
            Ok(value) => HostReply::Value(tool.shaped(&call.namespace, value)),
            Err(error) => {
                let code = ErrorCode::of_host_throw(&call.namespace, &call.method, true, &error.0);
                self.note_thrown(code, &error.0);
                HostReply::Throw(error.0)
            }
        }
    }

    /// Keeps what the host threw into the code (the newest 64), for coding the call's error.
    fn note_thrown(&self, code: ErrorCode, message: &str) {
        if let Ok(mut thrown) = self.thrown.lock() {
            if thrown.len() == 64 {
                thrown.remove(0);
            }
            thrown.push((code, message.to_string()));
        }
    }

    fn sdk_call(&self, call: &HostCall) -> HostReply {
        let catalog = &self.tool.inner.catalog;
        let text = |key: &str| call.args.get(key).and_then(Value::as_str);
        match call.method.as_str() {
            "search" => match text("query") {
                Some(q) => HostReply::Value(
                    serde_json::to_value(catalog.search(q, &[])).unwrap_or(Value::Null),
                ),
                None => HostReply::Throw("codemode.search(query) needs a string query".into()),
            },
            "describe" => match text("target") {
                Some(t) => match crate::discovery::DescribeOptions::from_args(&call.args)
                    .and_then(|o| catalog.describe_with(t, &[], o))
                {
                    Ok(d) => HostReply::Value(serde_json::to_value(d).unwrap_or(Value::Null)),
                    Err(message) => HostReply::Throw(message),
                },
                None => HostReply::Throw(
                    "codemode.describe(target) needs a string: a connector or connector.method"
                        .into(),
                ),
            },
            // Nothing is recorded: the step's function runs, and its value is returned as is.
            "step" => match text("name") {
                Some(_) => HostReply::Value(json!({
                    "replay": false,
                    "seq": self.next_seq.fetch_add(1, Ordering::Relaxed),
                })),
                None => HostReply::Throw("codemode.step(name, fn) needs a string name".into()),
            },
            "step_result" | "step_error" => HostReply::Value(Value::Null),
            "run" => HostReply::Throw(
                "codemode.run: this code tool keeps no saved snippets (it has no store), so \
                 there is nothing to run by name; write the steps in your code instead"
                    .into(),
            ),
            other => HostReply::Throw(format!(
                "codemode.{other} does not exist; the SDK has search, describe, step and run"
            )),
        }
    }
}
