//! The runtime: runs model code in passes, logs every call, pauses, resumes and rolls back.

mod control;
mod pass;
mod registry;
mod sdk;

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

pub use control::SaveSnippet;

/// Reshapes a completed result before the model sees it; the audit record keeps the original.
pub type TransformResult = Arc<dyn Fn(Value) -> Value + Send + Sync>;

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    name: String,
    store: Arc<dyn Store>,
    executor: Arc<dyn Executor>,
    connectors: Vec<Arc<dyn Connector>>,
    max_executions: usize,
    transform_result: Option<TransformResult>,
    lease: Duration,
    hints: Vec<(String, String)>,
}

impl RuntimeBuilder {
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

    /// Terminal executions kept when a new run begins (default 50).
    pub fn max_executions(mut self, keep: usize) -> Self {
        self.max_executions = keep;
        self
    }

    /// Reshapes completed results for the model, e.g. with [`crate::truncate_result`].
    pub fn transform_result(
        mut self,
        transform: impl Fn(Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.transform_result = Some(Arc::new(transform));
        self
    }

    /// How long a pass may hold an execution before another node may take it over (default
    /// 120 s, and at least twice the executor's pass deadline).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
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
        let registry = Registry::build(self.connectors, self.executor.reserved_globals())?;
        let catalog = sdk::build_catalog(&registry, &self.hints)?;
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
            }),
        })
    }
}

/// The handle an application holds: `tool()` for the model, the rest for people.
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
}

impl Runtime {
    /// Starts building a runtime over a store and an executor.
    pub fn builder(store: Arc<dyn Store>, executor: Arc<dyn Executor>) -> RuntimeBuilder {
        RuntimeBuilder {
            name: "default".into(),
            store,
            executor,
            connectors: Vec::new(),
            max_executions: DEFAULT_MAX_EXECUTIONS,
            transform_result: None,
            lease: Duration::from_secs(120),
            hints: Vec::new(),
        }
    }

    /// The runtime's name (its durable identity).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configured connector names.
    pub fn connector_names(&self) -> &[String] {
        &self.inner.registry.names
    }

    /// Runs model code as a new execution. Model mistakes come back as an error outcome;
    /// only a store failure is an `Err`.
    pub async fn call(&self, code: &str) -> Result<Outcome, RuntimeError> {
        let inner = &self.inner;
        let now = now_ms();
        let id = uuid::Uuid::new_v4().to_string();
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
        };
        let lease = self.lease(now);
        inner
            .store
            .insert_execution(&inner.name, &execution, &lease, inner.max_executions)
            .await?;
        if oversized {
            let error = format!(
                "the code is {code_len} characters; the limit for one durable value is {MAX_DURABLE_VALUE_CHARS}. Keep the code small: store large data elsewhere and pass a small reference (a path or an id)"
            );
            return self.fail_without_pass(&id, error).await;
        }
        pass::run(self, execution).await
    }

    /// Approves the pending action of a paused execution and continues it by replay.
    pub async fn approve(&self, execution_id: &str) -> Result<Outcome, RuntimeError> {
        self.resume(
            execution_id,
            ExecutionStatus::Paused,
            "approve",
            "paused",
            "resumed or ended",
        )
        .await
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
        pass::run(self, execution).await
    }

    fn lease(&self, now: i64) -> Lease {
        Lease {
            owner: self.inner.node.clone(),
            until_ms: now + self.inner.lease.as_millis() as i64,
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
        inner
            .store
            .commit(
                &inner.name,
                &Commit {
                    execution_id: id.to_string(),
                    owner: Some(inner.node.clone()),
                    entries: Vec::new(),
                    transition: Some(t),
                },
            )
            .await?;
        crate::status::note_execution(ExecutionStatus::Running, ExecutionStatus::Error);
        self.pass_ended(id, PassEndStatus::Error).await;
        self.dispose(id, ExecutionEndStatus::Error).await;
        Ok(Outcome::Error {
            execution_id: id.to_string(),
            error,
            logs: Vec::new(),
        })
    }

    /// Runs `on_pass_end` on every connector; errors are logged and ignored.
    async fn pass_ended(&self, id: &str, status: PassEndStatus) {
        self.each_connector("on_pass_end", id, |c| c.on_pass_end(id, status))
            .await;
    }

    /// Runs `dispose_execution` on every connector; errors are logged and ignored.
    async fn dispose(&self, id: &str, status: ExecutionEndStatus) {
        self.each_connector("dispose_execution", id, |c| c.dispose_execution(id, status))
            .await;
    }

    /// Runs one lifecycle hook on every connector at once, logging and ignoring failures.
    async fn each_connector<'a, F>(&'a self, hook: &str, id: &str, call: F)
    where
        F: Fn(&'a dyn Connector) -> futures::future::BoxFuture<'a, Result<(), crate::ToolError>>,
    {
        let registry = &self.inner.registry;
        let runs = registry.names.iter().map(|name| {
            let run = call(registry.connectors[name].connector.as_ref());
            async move {
                if let Err(e) = run.await {
                    tracing::warn!(connector = %name, execution = %id, error = %e, "{hook} failed");
                }
            }
        });
        futures::future::join_all(runs).await;
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
