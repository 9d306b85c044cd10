//! The connector: one method per MCP tool, over a supervised connection.

use crate::config::McpConfig;
use crate::error::{Cause, ConnectError};
use crate::result::map_result;
use crate::session::{self, Live, StderrTail};
use async_trait::async_trait;
use codemode::discovery::{check_connector_name, sanitize_tool_names};
use codemode::policy::RevertSet;
use codemode::{CallContext, Connector, ReplayPolicy, ToolError, ToolSpec};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::Value;
use std::collections::HashMap;
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
    secret: Option<String>,
}

impl std::fmt::Debug for McpConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnector")
            .field("name", &self.inner.config.name)
            .field("tools", &self.inner.tools.len())
            .finish()
    }
}

impl McpConnector {
    /// Starts or dials the server, lists its tools (every page) and builds the connector.
    pub async fn connect(config: McpConfig) -> Result<McpConnector, ConnectError> {
        let name = config.name.clone();
        let fail = |cause| ConnectError::new(name.clone(), cause);
        check_connector_name(&config.name).map_err(|e| fail(Cause::Name(e)))?;
        let secret = match &config.transport {
            crate::McpTransport::Http {
                bearer_token_env: Some(var),
                ..
            } => Some(session::secret_env(var, "bearer token").map_err(fail)?),
            _ => None,
        };
        let stderr = StderrTail::default();
        let started = session::start(&config, &stderr).await.map_err(fail)?;
        let live = started.live.clone();
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

        let originals: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
        let methods = sanitize_tool_names(&originals).map_err(|e| {
            live.cancel();
            fail(Cause::Name(e))
        })?;
        let resolve = |n: &str| -> Option<String> {
            originals
                .iter()
                .zip(&methods)
                .find(|(o, m)| o.as_str() == n || m.as_str() == n)
                .map(|(_, m)| m.clone())
        };
        let reverts = RevertSet::build(&config.reverts, resolve).map_err(|e| {
            live.cancel();
            fail(Cause::Revert(e))
        })?;
        let mut tools = Vec::with_capacity(listed.len());
        for (tool, method) in listed.iter().zip(&methods) {
            let read_only = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            let original = tool.name.to_string();
            tools.push(ToolSpec {
                name: method.clone(),
                description: tool
                    .description
                    .as_ref()
                    .map(|d| d.to_string())
                    .or_else(|| tool.title.clone()),
                input_schema: Value::Object((*tool.input_schema).clone()),
                output_schema: tool
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone())),
                requires_approval: config
                    .approval
                    .requires_approval(&[&original, method], read_only),
                read_only,
                replay: ReplayPolicy::Log,
                has_revert: reverts.has(method),
            });
        }
        let instructions = config
            .instructions
            .clone()
            .or_else(|| live.instructions.clone());
        let inner = Arc::new(Inner {
            originals: methods.into_iter().zip(originals).collect(),
            config,
            instructions,
            tools,
            reverts,
            current: Mutex::new(Some(live.clone())),
            stderr,
            shutdown: AtomicBool::new(false),
            restarts: AtomicU64::new(0),
            rapid_deaths: AtomicU32::new(0),
            secret,
        });
        watch(Arc::downgrade(&inner), started.service, live);
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
fn watch(inner: Weak<Inner>, service: RunningService<RoleClient, ()>, live: Arc<Live>) {
    let closed = live.closed.clone();
    let pid = live.pid;
    drop(live);
    let started = Instant::now();
    tokio::spawn(async move {
        let reason = service.waiting().await;
        if let Some(pid) = pid {
            kill_group(pid);
        }
        closed.store(true, Ordering::SeqCst);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let rapid = if started.elapsed() < RAPID_DEATH {
            inner.rapid_deaths.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            inner.rapid_deaths.store(0, Ordering::SeqCst);
            0
        };
        tracing::warn!(
            connector = %inner.config.name,
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
            tracing::warn!(connector = %inner.config.name, "restart failed: {e}");
        }
    });
}

/// Kills what is left of a stdio server's process group (its own children) once it has exited.
fn kill_group(pgid: u32) {
    #[cfg(unix)]
    if let Ok(pgid) = i32::try_from(pgid) {
        if pgid > 1 {
            // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
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
    let started = session::start(&inner.config, &inner.stderr)
        .await
        .map_err(|e| e.to_string())?;
    inner.restarts.fetch_add(1, Ordering::SeqCst);
    tracing::info!(connector = %inner.config.name, pid = ?started.live.pid, "MCP server restarted");
    *guard = Some(started.live.clone());
    watch(Arc::downgrade(inner), started.service, started.live.clone());
    Ok(started.live)
}

impl Inner {
    fn scrub(&self, text: String) -> String {
        match &self.secret {
            Some(s) if text.contains(s.as_str()) => text.replace(s.as_str(), "[redacted]"),
            _ => text,
        }
    }

    async fn call(self: &Arc<Self>, method: &str, args: Value) -> Result<Value, ToolError> {
        let name = &self.config.name;
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
        let timeout = Duration::from_millis(self.config.timeout_ms);
        match tokio::time::timeout(timeout, live.peer.call_tool(params)).await {
            Err(_) => Err(ToolError::new(format!(
                "{name}.{method} timed out after {} ms",
                timeout.as_millis()
            ))),
            Ok(Ok(result)) => {
                let wire = serde_json::to_value(&result)
                    .map_err(|e| ToolError::new(format!("{name}.{method}: {e}")))?;
                map_result(wire).map_err(|e| ToolError::new(self.scrub(e.0)))
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
        &self.inner.config.name
    }

    fn instructions(&self) -> Option<String> {
        self.inner.instructions.clone()
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools.clone()
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
        let name = &self.inner.config.name;
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
