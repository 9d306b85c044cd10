//! The runtime: runs model code in passes, logs every call, pauses, resumes and rolls back.

mod batch;
mod call;
mod caps;
mod control;
mod cursor;
mod decide;
mod delivery;
mod finish;
mod flush;
mod park;
mod pass;
pub(crate) mod registry;
mod replay;
pub(crate) mod sdk;
mod settle;
mod step;
mod trace;
pub(crate) mod transform;
mod watch;

use crate::connector::{Connector, ExecutionEndStatus, PassEndStatus};
use crate::error::RuntimeError;
use crate::executor::Executor;
use crate::model::{now_ms, Execution, Outcome};
use crate::status::ExecutionStatus;
use crate::store::{Claim, Commit, Lease, Store, Transition};
use crate::value::{js_len, DEFAULT_MAX_EXECUTIONS, MAX_DURABLE_VALUE_CHARS};
use registry::Registry;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

pub use batch::{DEFAULT_MAX_BATCH, MAX_MAX_BATCH};
pub use caps::{DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_PER_EXECUTION};
pub use control::SaveSnippet;
pub use decide::{Approval, CANCEL_GRACE};
/// Which rows of the replay tables a process has used (see `tests/transitions.rs` of the
/// conformance suite).
#[cfg(feature = "transition-coverage")]
pub use replay::coverage as replay_coverage;
pub use sdk::{ToolOptions, TOOL_EXAMPLE};
pub use trace::{CommitObserver, TraceCarrier, TRACE_TARGET};
pub use transform::TransformResult;
pub use watch::{EventObserver, RuntimeEvent, EVENT_BUFFER, MAX_EVENT_ERROR_CHARS, WAIT_POLL};

/// The default most calls one execution may make.
pub const DEFAULT_MAX_CALLS: u64 = 10_000;

/// The default most bytes one execution's log may hold (64 MiB).
pub const DEFAULT_MAX_LOG_BYTES: u64 = 64 * 1024 * 1024;

/// The default deepest nesting of snippets running snippets (`codemode.run` inside a snippet).
pub const DEFAULT_MAX_SNIPPET_DEPTH: usize = 8;

/// Builds a [`Runtime`].
///
/// Start with [`Runtime::builder`], add connectors and options, then
/// [`build`](RuntimeBuilder::build), which checks the whole configuration at once (connector
/// and tool names, input schemas, policies) and names the first problem.
///
/// ```
/// use codemode::{truncate_result, Runtime, RuntimeError, RustConnector, RustTool, TruncateOptions};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db"))?);
/// let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
/// let tickets = RustConnector::new("tickets").tool(
///     RustTool::new("open", |_args, _ctx| async { Ok(json!([])) })
///         .description("Lists the open tickets.")
///         .read_only(),
/// );
/// let runtime = Runtime::builder(store.clone(), executor.clone())
///     .name("support-bot")
///     .connector(tickets)
///     .hint("tickets", "the support queue")
///     .max_executions(200)
///     .transform_result(|value| truncate_result(value, TruncateOptions::default()))
///     .build()?;
/// assert_eq!(runtime.name(), "support-bot");
/// assert!(runtime.tool().description.contains("- tickets (1 method): the support queue"));
///
/// // `codemode` is the SDK's global, so no connector may take the name.
/// let refused = Runtime::builder(store, executor)
///     .connector(RustConnector::new("codemode"))
///     .build();
/// assert!(matches!(refused, Err(RuntimeError::InvalidConnector(_))));
/// # Ok(())
/// # }
/// ```
pub struct RuntimeBuilder {
    name: String,
    store: Arc<dyn Store>,
    executor: Arc<dyn Executor>,
    connectors: Vec<Arc<dyn Connector>>,
    unavailable: Vec<(String, String)>,
    max_executions: usize,
    transform_result: Option<TransformResult>,
    lease: Duration,
    hints: Vec<(String, String)>,
    max_calls: u64,
    max_log_bytes: u64,
    max_snippet_depth: usize,
    max_batch: usize,
    caps: caps::Caps,
    trace: Option<Arc<dyn TraceCarrier>>,
}

impl RuntimeBuilder {
    /// Keeps each execution's trace context with `carrier`, so that passes after a pause
    /// continue the trace of the first (see [`TraceCarrier`]); without one nothing is kept.
    pub fn trace_carrier(mut self, carrier: Arc<dyn TraceCarrier>) -> Self {
        self.trace = Some(carrier);
        self
    }

    /// Names the durable history (default `"default"`): letters, digits, `_`, `-` and `.`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

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

    /// Declares a configured connector that is unavailable (it failed to start) and why: the
    /// code still sees it as a global, whose every call throws `connector NAME failed to
    /// start: REASON`, and the tool description lists it as unavailable. The reason is shown
    /// to the model as given, so it must hold no secret.
    pub fn unavailable_connector(
        mut self,
        name: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        self.unavailable.push((name.into(), reason.into()));
        self
    }

    /// Terminal executions kept when a new run begins (default 50; `usize::MAX` turns
    /// retention off).
    pub fn max_executions(mut self, keep: usize) -> Self {
        self.max_executions = keep;
        self
    }

    /// Reshapes completed results for the model, e.g. with [`crate::truncate_result`].
    pub fn transform_result(
        mut self,
        transform: impl Fn(Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.transform_result = Some(transform::from_sync(transform));
        self
    }

    /// Reshapes completed results for the model with an async function; one that fails
    /// (`Err`, or a panic) leaves the model the untransformed result cut to the result budget,
    /// and a log line saying why.
    pub fn transform_result_async<F, Fut>(mut self, transform: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, String>> + Send + 'static,
    {
        self.transform_result = Some(transform::from_async(transform));
        self
    }

    /// How long a pass may hold an execution before another node may take it over (default
    /// 120 s, and at least twice the executor's pass deadline).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// The most calls (connector calls and steps) one execution may make (default 10,000).
    pub fn max_calls(mut self, calls: u64) -> Self {
        self.max_calls = calls;
        self
    }

    /// The most bytes one execution's log may hold: every call's arguments, result and
    /// error, as JSON (default 64 MiB).
    pub fn max_log_bytes(mut self, bytes: u64) -> Self {
        self.max_log_bytes = bytes;
        self
    }

    /// How deep snippets may nest, a snippet running a snippet counting one level (default 8,
    /// at least 1); a snippet that runs itself is refused at once whatever the depth.
    pub fn max_snippet_depth(mut self, depth: usize) -> Self {
        self.max_snippet_depth = depth;
        self
    }

    /// The most actions one pause proposes for approval (default 25, 1 to 1,000); the
    /// others the code started wait and are proposed, in seq order, once these are decided.
    pub fn max_batch(mut self, actions: usize) -> Self {
        self.max_batch = actions;
        self
    }

    /// A one-line hint for a connector, shown in the tool description.
    pub fn hint(mut self, connector: impl Into<String>, hint: impl Into<String>) -> Self {
        self.hints.push((connector.into(), hint.into()));
        self
    }

    /// Checks the configuration and builds the runtime.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        check_runtime_name(&self.name)?;
        if self.max_snippet_depth == 0 {
            return Err(RuntimeError::InvalidConfig(
                "max_snippet_depth is 0, which would refuse every codemode.run; use at least 1 (default 8)".into(),
            ));
        }
        batch::check_max_batch(self.max_batch)?;
        let registry = Registry::build(
            self.connectors,
            self.unavailable,
            self.executor.reserved_globals(),
        )?;
        let catalog = sdk::build_catalog(&registry, &self.hints)?;
        let caps = self
            .caps
            .checked(&registry.names, self.executor.pass_deadline())?;
        // A lease must outlive the longest pass, or a live pass could be taken over.
        let lease = match self.executor.pass_deadline() {
            Some(deadline) => self.lease.max(deadline.saturating_mul(2)),
            None => self.lease,
        };
        Ok(Runtime {
            inner: Arc::new(Inner {
                name: self.name,
                node: uuid::Uuid::new_v4().simple().to_string(),
                store: self.store,
                executor: self.executor,
                registry,
                catalog,
                max_executions: self.max_executions,
                transform_result: self.transform_result,
                lease,
                max_calls: self.max_calls,
                max_log_bytes: self.max_log_bytes,
                max_snippet_depth: self.max_snippet_depth,
                max_batch: self.max_batch,
                caps: Arc::new(caps),
                events: tokio::sync::broadcast::channel(watch::EVENT_BUFFER).0,
                observers: std::sync::RwLock::default(),
                passes: Arc::new(watch::Passes::default()),
                trace: self.trace,
                commit_observers: std::sync::RwLock::default(),
            }),
        })
    }
}

/// The handle an application holds: `tool()` for the model, the rest for people.
///
/// Build one with [`Runtime::builder`] over a [`Store`] and an [`Executor`]. Hand
/// [`Runtime::tool`] to the model and run the code it writes with [`Runtime::call`]. A call
/// to a tool that needs approval pauses the run: [`Runtime::approve`] continues it by replay,
/// [`Runtime::reject`] ends it, and [`Runtime::rollback`] later reverts what it applied. The
/// handle is cheap to clone and safe to share between tasks.
///
/// ```
/// use codemode::{Outcome, Runtime, RustConnector, RustTool};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("codemode.db"))?);
/// let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
/// let runtime = Runtime::builder(store, executor)
///     .connector(
///         RustConnector::new("notes")
///             .tool(RustTool::new("count", |_args, _ctx| async { Ok(json!(3)) }).read_only())
///             // No policy and not read-only: each call waits for a person's approval.
///             .tool(RustTool::new("add", |args, _ctx| async move { Ok(args) })),
///     )
///     .build()?;
///
/// let outcome = runtime.call("async () => await notes.count()").await?;
/// let Outcome::Completed { result, .. } = outcome else { panic!("{outcome:?}") };
/// assert_eq!(result, json!(3));
///
/// let paused = runtime.call(r#"async () => notes.add({ text: "hi" })"#).await?;
/// let Outcome::Paused { pending, .. } = &paused else { panic!("{paused:?}") };
/// assert_eq!(pending[0].method, "add");
///
/// let approved = runtime.approve(paused.execution_id()).await?;
/// let Outcome::Completed { result, .. } = approved else { panic!("{approved:?}") };
/// assert_eq!(result, json!({ "text": "hi" }));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub name: String,
    pub node: String,
    pub store: Arc<dyn Store>,
    pub executor: Arc<dyn Executor>,
    pub registry: Registry,
    pub catalog: crate::discovery::Catalog,
    pub max_executions: usize,
    pub transform_result: Option<TransformResult>,
    pub lease: Duration,
    pub max_calls: u64,
    pub max_log_bytes: u64,
    pub max_snippet_depth: usize,
    pub max_batch: usize,
    pub caps: Arc<caps::Caps>,
    pub events: tokio::sync::broadcast::Sender<watch::RuntimeEvent>,
    pub observers: std::sync::RwLock<Vec<watch::EventObserver>>,
    pub passes: Arc<watch::Passes>,
    pub trace: Option<Arc<dyn TraceCarrier>>,
    pub commit_observers: std::sync::RwLock<Vec<CommitObserver>>,
}

impl Runtime {
    /// Starts building a runtime over a store and an executor.
    pub fn builder(store: Arc<dyn Store>, executor: Arc<dyn Executor>) -> RuntimeBuilder {
        RuntimeBuilder {
            name: "default".into(),
            store,
            executor,
            connectors: Vec::new(),
            unavailable: Vec::new(),
            max_executions: DEFAULT_MAX_EXECUTIONS,
            transform_result: None,
            lease: Duration::from_secs(120),
            hints: Vec::new(),
            max_calls: DEFAULT_MAX_CALLS,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
            max_snippet_depth: DEFAULT_MAX_SNIPPET_DEPTH,
            max_batch: DEFAULT_MAX_BATCH,
            caps: caps::Caps::default(),
            trace: None,
        }
    }

    /// The runtime's name (its durable identity).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// How many terminal executions are kept when a new run begins (the retention limit).
    pub fn max_executions(&self) -> usize {
        self.inner.max_executions
    }

    /// The most actions one pause proposes for approval.
    pub fn max_batch(&self) -> usize {
        self.inner.max_batch
    }

    /// How long a pass holds its execution before another node may take it over.
    pub fn lease_duration(&self) -> Duration {
        self.inner.lease
    }

    /// The configured connector names.
    pub fn connector_names(&self) -> &[String] {
        &self.inner.registry.names
    }

    /// Runs model code as a new execution. Model mistakes come back as an error outcome;
    /// only a store failure is an `Err`.
    pub async fn call(&self, code: &str) -> Result<Outcome, RuntimeError> {
        self.call_with_id(&Runtime::new_execution_id(), code).await
    }

    /// A fresh execution id, for [`Runtime::call_with_id`].
    pub fn new_execution_id() -> String {
        uuid::Uuid::new_v4().to_string()
    }

    /// [`Runtime::call`] with the id the new execution gets, so the caller knows it before
    /// the pass ends (to cancel it, or to follow its events). The id must be new: one already
    /// in the store is a store error and nothing runs.
    pub async fn call_with_id(&self, id: &str, code: &str) -> Result<Outcome, RuntimeError> {
        let valid = (1..=128).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(RuntimeError::InvalidExecutionId(id.to_string()));
        }
        let inner = &self.inner;
        let now = now_ms();
        let id = id.to_string();
        let code_len = js_len(code);
        let oversized = code_len > MAX_DURABLE_VALUE_CHARS;
        let execution = Execution {
            id: id.clone(),
            code: if oversized {
                format!("[code omitted: {code_len} characters exceeds the {MAX_DURABLE_VALUE_CHARS}-character limit]")
            } else {
                code.to_string()
            },
            status: ExecutionStatus::Running,
            log: Vec::new(),
            result: None,
            error: None,
            logs: Vec::new(),
            connectors: inner.registry.names.clone(),
            created_at: now,
            updated_at: now,
            decisions: Vec::new(),
            traceparent: None,
            clock: Default::default(),
        };
        let span = self.pass_span(&execution, None);
        let mut execution = execution;
        execution.traceparent = self.save_trace(&span);
        let first = async {
            let lease = self.lease(now);
            inner
                .store
                .insert_execution(&inner.name, &execution, &lease, inner.max_executions)
                .await?;
            self.publish_status(&id, ExecutionStatus::Running);
            if oversized {
                let error = format!(
                    "the code is {code_len} characters; the limit for one durable value is {MAX_DURABLE_VALUE_CHARS}. Keep the code small: store large data elsewhere and pass a small reference (a path or an id)"
                );
                return self.fail_without_pass(&id, error).await.map(Some);
            }
            Ok(None)
        };
        if let Some(outcome) = first.instrument(span.clone()).await? {
            return Ok(outcome);
        }
        pass::run(self, execution, span).await
    }

    /// Approves the pending actions of a paused execution as `local` and continues it by
    /// replay; see [`Runtime::approve_with`] for edited arguments, scope and the actor.
    pub async fn approve(&self, execution_id: &str) -> Result<Outcome, RuntimeError> {
        self.approve_with(execution_id, Approval::default()).await
    }

    /// Takes over a `running` execution whose node died (its lease expired) and runs a new
    /// pass: applied calls replay, a call left `executing` runs again with the same key.
    pub async fn resume_interrupted(&self, execution_id: &str) -> Result<Outcome, RuntimeError> {
        self.resume(
            execution_id,
            ExecutionStatus::Running,
            "resume_interrupted",
            "running with an expired lease",
            "taken over (its lease has not expired, or another node won)",
        )
        .await
    }

    /// Claims an execution in `from` for a new pass, then runs it.
    async fn resume(
        &self,
        execution_id: &str,
        from: ExecutionStatus,
        operation: &'static str,
        expected: &'static str,
        lost: &'static str,
    ) -> Result<Outcome, RuntimeError> {
        let inner = &self.inner;
        let now = now_ms();
        let claim = inner
            .store
            .claim(
                &inner.name,
                execution_id,
                from,
                &self.lease(now),
                now,
                &inner.registry.names,
            )
            .await?;
        let execution = match claim {
            Claim::Won(execution) => execution,
            Claim::Unknown => return Err(RuntimeError::UnknownExecution(execution_id.into())),
            Claim::Refused(execution) => {
                let missing = inner.registry.missing(&execution.connectors);
                return Err(if execution.status != from {
                    RuntimeError::WrongStatus {
                        id: execution.id,
                        status: execution.status,
                        operation,
                        expected,
                    }
                } else if !missing.is_empty() {
                    RuntimeError::MissingConnectors {
                        id: execution.id,
                        missing,
                    }
                } else {
                    RuntimeError::AlreadyHandled {
                        id: execution.id,
                        what: lost,
                    }
                });
            }
        };
        crate::status::note_execution(from, ExecutionStatus::Running);
        self.publish_status(execution_id, ExecutionStatus::Running);
        let span = self.pass_span(&execution, None);
        pass::run(self, execution, span).await
    }

    fn lease(&self, now: i64) -> Lease {
        Lease {
            owner: self.inner.node.clone(),
            until_ms: crate::clock::ms_after(now, self.inner.lease),
        }
    }

    async fn load(&self, id: &str) -> Result<Execution, RuntimeError> {
        self.inner
            .store
            .execution(&self.inner.name, id)
            .await?
            .ok_or_else(|| RuntimeError::UnknownExecution(id.to_string()))
    }

    async fn fail_without_pass(&self, id: &str, error: String) -> Result<Outcome, RuntimeError> {
        let inner = &self.inner;
        let mut t = Transition::new(ExecutionStatus::Running, ExecutionStatus::Error, now_ms());
        t.error = Some(error.clone());
        self.commit_traced(
            &Commit {
                execution_id: id.to_string(),
                owner: Some(inner.node.clone()),
                entries: Vec::new(),
                transition: Some(t),
                clock: None,
            },
            None,
        )
        .await?;
        crate::status::note_execution(ExecutionStatus::Running, ExecutionStatus::Error);
        self.publish_end(id, ExecutionStatus::Error, Some(&error));
        self.pass_ended(id, PassEndStatus::Error).await;
        self.dispose(id, ExecutionEndStatus::Error).await;
        let code = crate::ErrorCode::of_error(&error, &[]);
        Ok(Outcome::error(id, error, code, Vec::new()))
    }

    /// Runs `on_pass_end` on every connector; errors are logged and ignored.
    async fn pass_ended(&self, id: &str, status: PassEndStatus) {
        self.inner
            .registry
            .each_connector("on_pass_end", id, |c| c.on_pass_end(id, status))
            .await;
    }

    /// Runs `dispose_execution` on every connector; errors are logged and ignored.
    async fn dispose(&self, id: &str, status: ExecutionEndStatus) {
        self.inner
            .registry
            .each_connector("dispose_execution", id, |c| c.dispose_execution(id, status))
            .await;
    }
}

fn check_runtime_name(name: &str) -> Result<(), RuntimeError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(RuntimeError::InvalidConfig(format!(
            "runtime name {name:?} must be 1-128 letters, digits, '_', '-' or '.'"
        )))
    }
}
