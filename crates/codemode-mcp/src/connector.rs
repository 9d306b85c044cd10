//! The connector: one method per MCP tool, over a supervised connection.

use crate::children;
use crate::config::{McpConfig, McpTransport, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS};
use crate::env::{self, ChildEnv};
use crate::error::{Cause, ConnectError};
use crate::result::map_result;
use crate::session::{self, Live, StderrTail};
use async_trait::async_trait;
use codemode::discovery::check_connector_name;
use codemode::policy::{ApprovalPolicy, RevertRule, RevertSet, ToolOverride};
use codemode::secrets::Secrets;
use codemode::{CallContext, Connector, ToolError, ToolSpec};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, Service, ServiceError};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// A server that dies sooner than this after starting counts as a rapid death.
const RAPID_DEATH: Duration = Duration::from_secs(2);
/// After this many rapid deaths in a row, restarts wait for the next call.
const MAX_EAGER_RESTARTS: u32 = 5;

/// An MCP server as a connector. Dropping it (or [`McpConnector::shutdown`]) stops the server.
pub struct McpConnector {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpConfig,
    instructions: Option<String>,
    tools: Vec<ToolSpec>,
    originals: HashMap<String, String>,
    reverts: RevertSet,
    current: Mutex<Option<Arc<Live>>>,
    stderr: StderrTail,
    shutdown: AtomicBool,
    restarts: AtomicU64,
    rapid_deaths: AtomicU32,
    /// The child's environment, resolved once at connect.
    env: ChildEnv,
    /// Secret values (bearer token, referenced variables) replaced by `[redacted]` in every
    /// form they may come back in (raw, percent-encoded, JSON-escaped, base64).
    secrets: Secrets,
    warnings: Vec<String>,
    /// Whether a closed connection is started again (not for a client the host gave).
    restartable: bool,
}

/// Where a connection came from: what a restart needs, and the secrets to scrub.
struct Origin {
    env: ChildEnv,
    secrets: Vec<String>,
    stderr: StderrTail,
    restartable: bool,
}

/// The settings of [`McpConnector::from_client`]: those of [`McpConfig`] that do not concern
/// reaching the server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Which tools need approval (tools annotated `readOnlyHint: true` are read-only).
    pub approval: ApprovalPolicy,
    /// Compensating calls for rollback.
    pub reverts: Vec<RevertRule>,
    /// Per-tool settings, by method or server name.
    pub tools: BTreeMap<String, ToolOverride>,
    /// Method names chosen for tools, by the tool's name on the server.
    pub rename: BTreeMap<String, String>,
    /// Guidance for the model; the server's own instructions when absent.
    pub instructions: Option<String>,
    /// Per-call timeout in milliseconds.
    pub timeout_ms: u64,
    /// Time allowed for listing the tools, in milliseconds.
    pub list_timeout_ms: u64,
    /// Let in tools that take code to run (left out by default; see `McpConfig`).
    pub allow_code_tools: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            approval: ApprovalPolicy::default(),
            reverts: Vec::new(),
            tools: BTreeMap::new(),
            rename: BTreeMap::new(),
            instructions: None,
            timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
            list_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            allow_code_tools: false,
        }
    }
}

impl std::fmt::Debug for McpConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnector")
            .field("name", &self.inner.config.settings.name)
            .field("tools", &self.inner.tools.len())
            .finish()
    }
}

impl McpConnector {
    /// Starts or dials the server, lists its tools (every page) and builds the connector.
    pub async fn connect(config: McpConfig) -> Result<McpConnector, ConnectError> {
        let name = config.settings.name.clone();
        let fail = |cause| ConnectError::new(name.clone(), cause);
        check_connector_name(&config.settings.name).map_err(|e| fail(Cause::Name(e)))?;
        let (child_env, secrets) = match &config.transport {
            McpTransport::Stdio { env, .. } => {
                let resolved = env::resolve(env).map_err(fail)?;
                let secrets = resolved.secrets.clone();
                (resolved, secrets)
            }
            McpTransport::Http {
                bearer_token_env, ..
            } => {
                let token = match bearer_token_env {
                    Some(var) => vec![crate::env::secret_env(var, "bearer token").map_err(fail)?],
                    None => Vec::new(),
                };
                (ChildEnv::default(), token)
            }
        };
        let stderr = StderrTail::scrubbing(Secrets::new(&secrets));
        let started = session::start(&config, &child_env, &stderr)
            .await
            .map_err(fail)?;
        let origin = Origin {
            env: child_env,
            secrets,
            stderr,
            restartable: true,
        };
        Self::finish(config, started.live, started.service, origin).await
    }

    /// An MCP connector over a client the host has already connected (its own transport, auth
    /// or client handler). The tools are listed now; `options` are the per-connector settings
    /// of [`McpConfig`]. The connection is the host's: if it closes, calls fail with an error
    /// saying so and nothing is restarted; [`shutdown`](McpConnector::shutdown) or dropping
    /// the connector closes it.
    pub async fn from_client<S: Service<RoleClient>>(
        name: impl Into<String>,
        client: RunningService<RoleClient, S>,
        options: ClientOptions,
    ) -> Result<McpConnector, ConnectError> {
        let name = name.into();
        check_connector_name(&name).map_err(|e| ConnectError::new(name.clone(), Cause::Name(e)))?;
        let mut config =
            McpConfig::new(name, McpTransport::http("the connection given by the host"));
        config.settings.approval = options.approval;
        config.settings.reverts = options.reverts;
        config.settings.tools = options.tools;
        config.rename = options.rename;
        config.instructions = options.instructions;
        config.settings.timeout_ms = Some(options.timeout_ms);
        config.startup_timeout_ms = options.list_timeout_ms;
        config.allow_code_tools = options.allow_code_tools;
        let live = session::live(&client, None);
        let origin = Origin {
            env: ChildEnv::default(),
            secrets: Vec::new(),
            stderr: StderrTail::default(),
            restartable: false,
        };
        Self::finish(config, live, client, origin).await
    }

    /// Lists the tools of a live connection and builds the connector around it.
    async fn finish<S: Service<RoleClient>>(
        config: McpConfig,
        live: Arc<Live>,
        service: RunningService<RoleClient, S>,
        origin: Origin,
    ) -> Result<McpConnector, ConnectError> {
        let name = config.settings.name.clone();
        let fail = |cause| ConnectError::new(name.clone(), cause);
        let listed = tokio::time::timeout(
            Duration::from_millis(config.startup_timeout_ms),
            live.peer.list_all_tools(),
        )
        .await;
        let listed = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                live.cancel();
                return Err(fail(Cause::ListTools {
                    target: config.transport.describe(),
                    message: e.to_string(),
                }));
            }
            Err(_) => {
                live.cancel();
                return Err(fail(Cause::ListTools {
                    target: config.transport.describe(),
                    message: "timed out".into(),
                }));
            }
        };
        let methods = crate::tools::build(&listed, &config).map_err(|e| {
            live.cancel();
            fail(e)
        })?;
        let warnings: Vec<String> = methods
            .warnings
            .iter()
            .map(|w| format!("MCP connector `{name}`: {w}"))
            .collect();
        for w in &warnings {
            tracing::warn!("{w}");
        }
        let instructions = config
            .instructions
            .clone()
            .or_else(|| live.instructions.clone());
        let secrets = Secrets::new(origin.secrets);
        let inner = Arc::new(Inner {
            originals: methods.originals,
            config,
            instructions,
            tools: methods.tools,
            reverts: methods.reverts,
            current: Mutex::new(Some(live.clone())),
            stderr: origin.stderr,
            shutdown: AtomicBool::new(false),
            restarts: AtomicU64::new(0),
            rapid_deaths: AtomicU32::new(0),
            env: origin.env,
            secrets,
            warnings,
            restartable: origin.restartable,
        });
        watch(Arc::downgrade(&inner), service, live);
        Ok(McpConnector { inner })
    }

    /// The server's process id (stdio servers), when one is running.
    pub async fn pid(&self) -> Option<u32> {
        let guard = self.inner.current.lock().await;
        guard
            .as_ref()
            .filter(|l| !l.is_closed())
            .and_then(|l| l.pid)
    }

    /// What went wrong without stopping the connector (tools renamed or left out, unused
    /// configuration), one sentence each naming the connector; empty when all is well.
    pub fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    /// How many times the server has been restarted.
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::SeqCst)
    }

    /// Stops the server and waits (up to a few seconds) until it is gone. Later calls fail.
    pub async fn shutdown(&self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        let live = self.inner.current.lock().await.take();
        if let Some(live) = live {
            live.cancel();
            let deadline = Instant::now() + Duration::from_secs(8);
            while !live.closed.load(Ordering::SeqCst) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        if let Some(live) = self.current.get_mut().take() {
            live.cancel();
        }
    }
}

/// Waits for the service to end, marks it closed, and restarts the server unless shut down.
fn watch<S: Service<RoleClient>>(
    inner: Weak<Inner>,
    service: RunningService<RoleClient, S>,
    live: Arc<Live>,
) {
    let closed = live.closed.clone();
    let pid = live.pid;
    drop(live);
    let started = Instant::now();
    tokio::spawn(async move {
        let reason = service.waiting().await;
        if let Some(pid) = pid {
            children::kill_group(pid);
        }
        closed.store(true, Ordering::SeqCst);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.shutdown.load(Ordering::SeqCst) || !inner.restartable {
            return;
        }
        let rapid = if started.elapsed() < RAPID_DEATH {
            inner.rapid_deaths.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            inner.rapid_deaths.store(0, Ordering::SeqCst);
            0
        };
        tracing::warn!(
            connector = %inner.config.settings.name,
            ?pid,
            ?reason,
            "MCP server stopped{}",
            inner.stderr.suffix()
        );
        if rapid >= MAX_EAGER_RESTARTS {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100 * (1 << rapid))).await;
        if let Err(e) = ensure_live(&inner).await {
            tracing::warn!(connector = %inner.config.settings.name, "restart failed: {e}");
        }
    });
}

/// The live connection, restarting the server first if it has stopped.
async fn ensure_live(inner: &Arc<Inner>) -> Result<Arc<Live>, String> {
    let mut guard = inner.current.lock().await;
    if let Some(live) = guard.as_ref() {
        if !live.is_closed() {
            return Ok(live.clone());
        }
    }
    if inner.shutdown.load(Ordering::SeqCst) {
        return Err("the connector has been shut down".into());
    }
    if !inner.restartable {
        return Err(
            "the connection the host gave it has closed, and codemode cannot reopen it".into(),
        );
    }
    let started = session::start(&inner.config, &inner.env, &inner.stderr)
        .await
        .map_err(|e| e.to_string())?;
    inner.restarts.fetch_add(1, Ordering::SeqCst);
    tracing::info!(connector = %inner.config.settings.name, pid = ?started.live.pid, "MCP server restarted");
    *guard = Some(started.live.clone());
    watch(Arc::downgrade(inner), started.service, started.live.clone());
    Ok(started.live)
}

impl Inner {
    fn scrub(&self, text: String) -> String {
        if self.secrets.is_empty() {
            return text;
        }
        self.secrets.scrub(&text)
    }

    /// Every string of `value` scrubbed (keys included).
    fn scrub_value(&self, value: Value) -> Value {
        self.secrets.scrub_value(value)
    }

    async fn call(self: &Arc<Self>, method: &str, args: Value) -> Result<Value, ToolError> {
        let name = &self.config.settings.name;
        let Some(original) = self.originals.get(method) else {
            return Err(ToolError::new(format!("{name} has no method {method:?}")));
        };
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::new(format!(
                    "{name}.{method} takes one object argument, got {other}"
                )))
            }
        };
        let live = ensure_live(self).await.map_err(|e| {
            ToolError::new(self.scrub(format!("MCP server `{name}` is not available: {e}")))
        })?;
        let mut params = CallToolRequestParams::new(original.clone());
        params.arguments = arguments;
        let timeout = self.config.call_timeout();
        match tokio::time::timeout(timeout, live.peer.call_tool(params)).await {
            Err(_) => Err(ToolError::new(format!(
                "{name}.{method} timed out after {} ms",
                timeout.as_millis()
            ))),
            Ok(Ok(result)) => {
                let wire = serde_json::to_value(&result)
                    .map_err(|e| ToolError::new(format!("{name}.{method}: {e}")))?;
                map_result(wire)
                    .map(|v| self.scrub_value(v))
                    .map_err(|e| ToolError::new(self.scrub(e.0)))
            }
            Ok(Err(ServiceError::McpError(e))) => Err(ToolError::new(
                self.scrub(format!("{name}.{method}: {}", e.message)),
            )),
            Ok(Err(e)) => {
                let stopped = matches!(e, ServiceError::TransportClosed) || live.is_closed();
                let msg = if stopped {
                    format!(
                        "MCP server `{name}` stopped during the call to {method} ({e}); it is being \
                         restarted, and the call may or may not have taken effect{}",
                        self.stderr.suffix()
                    )
                } else {
                    format!("{name}.{method} failed: {e}")
                };
                Err(ToolError::new(self.scrub(msg)))
            }
        }
    }
}

#[async_trait]
impl Connector for McpConnector {
    fn name(&self) -> &str {
        &self.inner.config.settings.name
    }

    fn instructions(&self) -> Option<String> {
        self.inner.instructions.clone()
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools.clone()
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    async fn execute(
        &self,
        method: &str,
        args: Value,
        _ctx: CallContext,
    ) -> Result<Value, ToolError> {
        self.inner.call(method, args).await
    }

    async fn revert(
        &self,
        method: &str,
        args: Value,
        result: Value,
        _ctx: CallContext,
    ) -> Result<(), ToolError> {
        let name = &self.inner.config.settings.name;
        let Some(plan) = self.inner.reverts.plan(method, &args, &result) else {
            return Err(ToolError::new(format!("{name}.{method} has no revert")));
        };
        let (revert, revert_args) =
            plan.map_err(|e| ToolError::new(format!("revert of {name}.{method}: {e}")))?;
        self.inner
            .call(&revert, revert_args)
            .await
            .map(|_| ())
            .map_err(|e| ToolError::new(format!("revert of {name}.{method} by {revert}: {e}")))
    }
}
