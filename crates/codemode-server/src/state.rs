//! What every route shares, and the options a host gives when it mounts the server.

use codemode::Runtime;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Default largest request body of the control API, in bytes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// How the server is mounted: limits, who may call, and what it tells people.
///
/// The default serves only clients on loopback, with no token: set `tokens` to serve other
/// clients that carry one, or call [`ServerOptions::host_authenticated`] when the host
/// authenticates every request itself in front of the router.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest HTTP request body accepted by the control API, in bytes.
    pub max_body_bytes: usize,
    /// Who is served when `tokens` is empty: loopback clients not relayed by a proxy (the
    /// default), loopback clients including those the host's local proxy relays, or every
    /// client the host lets through.
    pub access: crate::auth::Access,
    /// The tokens API and MCP requests must carry, with their roles (none: no token needed,
    /// and only `access` decides who is served).
    pub tokens: crate::auth::Tokens,
    /// The address the server listens on, for the `Host` check (`None`: local names on any port).
    pub listen: Option<std::net::SocketAddr>,
    /// Extra `Host` values the server answers to (`auth.allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// Whether accepting an MCP elicitation approves a paused action (`approvals.elicitation`).
    pub elicitation: bool,
    /// How long a tool call waits for a decision on a paused run (`approvals.wait_ms`).
    pub wait: std::time::Duration,
    /// How a person reaches this state from a shell, e.g. `codemode --server URL`: paused MCP
    /// results print `{approve_hint} approve ID` (empty: `codemode`).
    pub approve_hint: String,
    /// Connectors that failed to start, as `(name, error)`, for `/healthz` and `/api/connectors`.
    pub failed_connectors: Vec<(String, String)>,
    /// Connectors that started with warnings (tools left out or renamed), as `(name, warning)`.
    pub connector_warnings: Vec<(String, String)>,
    /// Cancelling it ends every MCP session, so open event streams do not hold up a shutdown.
    pub shutdown: CancellationToken,
    /// How the `codemode` tool is described to the model (`[tool] description`).
    pub tool: codemode::runtime::ToolOptions,
    /// Where a cut MCP result is saved whole (`[workspace]`); `None` when it is off.
    pub workspace: Option<codemode_workspace::Workspace>,
    /// The budget an MCP tool call's outcome is cut to (`limits.max_result_tokens`).
    pub result_budget: codemode::TruncateOptions,
    /// The most actions one pause proposes (the runtime's `max_batch`), said in a pause's text.
    pub max_batch: usize,
    /// Passes running at once and requests waiting for one (`limits.max_running`,
    /// `limits.max_queued`).
    pub admission: crate::admission::AdmissionOptions,
    /// Event streams open at once, in all and per client (`limits.max_event_streams`,
    /// `limits.max_event_streams_per_client`).
    pub streams: crate::events::StreamLimits,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            access: crate::auth::Access::default(),
            tokens: crate::auth::Tokens::default(),
            listen: None,
            allowed_hosts: Vec::new(),
            elicitation: true,
            wait: crate::wait::DEFAULT_WAIT,
            approve_hint: String::new(),
            failed_connectors: Vec::new(),
            connector_warnings: Vec::new(),
            shutdown: CancellationToken::new(),
            tool: codemode::runtime::ToolOptions::default(),
            workspace: None,
            result_budget: codemode::TruncateOptions::default(),
            max_batch: codemode::DEFAULT_MAX_BATCH,
            admission: crate::admission::AdmissionOptions::default(),
            streams: crate::events::StreamLimits::default(),
        }
    }
}

impl ServerOptions {
    /// These options with every client served without a token
    /// ([`Access::HostAuthenticated`](crate::auth::Access::HostAuthenticated)): for a host that
    /// authenticates every request itself (its own middleware or proxy) before the router.
    pub fn host_authenticated(mut self) -> Self {
        self.access = crate::auth::Access::HostAuthenticated;
        self
    }

    /// These options with the requests a proxy on this machine relays served without a token
    /// ([`Access::BehindLocalProxy`](crate::auth::Access::BehindLocalProxy)): for a host
    /// whose own reverse proxy, on loopback, admits only the clients it means to serve.
    pub fn behind_local_proxy(mut self) -> Self {
        self.access = crate::auth::Access::BehindLocalProxy;
        self
    }
}

/// The state every handler reads: the runtime and the options it was mounted with.
pub struct ServerState {
    /// The runtime every route works on.
    pub runtime: Arc<Runtime>,
    /// The options the server was mounted with.
    pub options: ServerOptions,
    /// The places for running passes (from `options.admission`).
    pub admission: crate::admission::Admission,
    /// This node's events, numbered, for the event streams.
    pub events: Arc<crate::events::EventLog>,
}

/// The shared state as handlers receive it.
pub type SharedState = Arc<ServerState>;

impl ServerState {
    /// The tool to hand the model, described as the options say (the generated description
    /// when the options' template is refused; `codemode serve` checks it at start).
    pub fn tool(&self) -> codemode::discovery::ToolDefinition {
        self.runtime
            .tool_with(self.options.tool.clone())
            .unwrap_or_else(|_| self.runtime.tool())
    }
}

impl ServerState {
    /// State over `runtime` with `options`.
    pub fn new(runtime: Arc<Runtime>, options: ServerOptions) -> SharedState {
        let admission = crate::admission::Admission::new(options.admission);
        let events = crate::events::EventLog::start_with(&runtime, options.streams);
        Arc::new(ServerState {
            events,
            runtime,
            options,
            admission,
        })
    }
}
