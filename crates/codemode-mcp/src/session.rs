//! One live connection to a server: spawning or dialling it, the handshake, its stderr.

use crate::children::{self, SpawnRefused};
use crate::config::{McpConfig, McpTransport};
use crate::env::{secret_env, ChildEnv};
use crate::error::Cause;
use codemode::secrets::Secrets;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::service::{RoleClient, RunningService, Service};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, ServiceExt};
use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// How many stderr lines are kept for error messages.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept.
const STDERR_LINE_CHARS: usize = 500;

/// The last lines a server wrote to stderr, with the connector's secrets scrubbed: a server
/// may echo its environment (a token it was given) there, and these lines reach logs and
/// error messages people read.
#[derive(Debug, Default, Clone)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    secrets: Secrets,
}

impl StderrTail {
    /// An empty tail that scrubs `secrets` from every line it is given.
    pub fn scrubbing(secrets: Secrets) -> StderrTail {
        StderrTail {
            lines: Arc::default(),
            secrets,
        }
    }

    /// `line` scrubbed of the secrets, in every form.
    fn clean(&self, line: String) -> String {
        if self.secrets.is_empty() {
            return line;
        }
        self.secrets.scrub(&line)
    }

    /// Keeps `line` (already clean) cut to [`STDERR_LINE_CHARS`], dropping the oldest beyond
    /// [`STDERR_LINES`].
    fn push(&self, line: &str) {
        let mut q = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() == STDERR_LINES {
            q.pop_front();
        }
        q.push_back(line.chars().take(STDERR_LINE_CHARS).collect());
    }

    /// `"; stderr: …"` with the kept lines, or nothing.
    pub fn suffix(&self) -> String {
        let q = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if q.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = q.iter().map(String::as_str).collect();
        format!("; server stderr: {}", lines.join(" | "))
    }
}

/// A connected, initialised server.
pub struct Live {
    /// Sends requests.
    pub peer: Peer<RoleClient>,
    /// Set once the connection has ended.
    pub closed: Arc<AtomicBool>,
    /// The process id, for stdio servers.
    pub pid: Option<u32>,
    /// The server's instructions from the handshake.
    pub instructions: Option<String>,
    cancel: Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
}

impl Live {
    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || self.peer.is_transport_closed()
    }

    /// Ends the connection; a stdio server is told to stop, then killed with its process group.
    pub fn cancel(&self) {
        if let Some(token) = self.cancel.lock().unwrap_or_else(|e| e.into_inner()).take() {
            token.cancel();
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// A running service plus what is needed to watch it.
pub struct Started {
    /// The live half, shared with callers.
    pub live: Arc<Live>,
    /// The service, to be awaited by the watcher.
    pub service: RunningService<RoleClient, ()>,
}

/// The operating system's complaint, with the working directory when that is what is missing.
fn spawn_message(e: &std::io::Error, cwd: Option<&std::path::Path>) -> String {
    match cwd {
        Some(dir) if e.kind() == std::io::ErrorKind::NotFound && !dir.is_dir() => {
            format!(
                "{e} (the working directory {} does not exist)",
                dir.display()
            )
        }
        _ => e.to_string(),
    }
}

/// Starts (stdio, with exactly the environment `env`) or dials (HTTP) the server and completes
/// the handshake.
pub async fn start(
    config: &McpConfig,
    env: &ChildEnv,
    stderr: &StderrTail,
) -> Result<Started, Cause> {
    let target = config.transport.describe();
    let startup = Duration::from_millis(config.startup_timeout_ms);
    let handshake = |message: String, stderr: &StderrTail| Cause::Handshake {
        target: target.clone(),
        message,
        stderr: stderr.suffix(),
    };
    let (serving, pid) = match &config.transport {
        McpTransport::Stdio {
            command, args, cwd, ..
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().envs(env.vars.iter().cloned());
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            let mut wrapped = CommandWrap::from(cmd);
            wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            let spawned = children::spawn_recorded(|| {
                let spawned = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()?;
                let pid = spawned.0.id();
                Ok((spawned, pid))
            });
            let ((proc, err), pid) = spawned.map_err(|e| Cause::Spawn {
                command: target.clone(),
                message: match e {
                    SpawnRefused::Stopping => "codemode is shutting down".to_string(),
                    SpawnRefused::Io(e) => spawn_message(&e, cwd.as_deref()),
                },
            })?;
            if let Some(err) = err {
                let tail = stderr.clone();
                let name = config.settings.name.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(err).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let line = tail.clean(line);
                        tracing::debug!(connector = %name, "server stderr: {line}");
                        tail.push(&line);
                    }
                });
            }
            let serving = tokio::time::timeout(startup, ().serve(proc)).await;
            (serving, pid)
        }
        McpTransport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            let mut custom = HashMap::new();
            for (k, v) in headers {
                let pair = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .ok()
                    .zip(reqwest::header::HeaderValue::from_str(v).ok())
                    .ok_or_else(|| Cause::BadHeader(k.clone()))?;
                custom.insert(pair.0, pair.1);
            }
            let mut transport_config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            if let Some(var) = bearer_token_env {
                transport_config = transport_config.auth_header(secret_env(var, "bearer token")?);
            }
            let client = codemode_tls::http_client_builder()
                .map_err(|e| Cause::Client(format!("its TLS settings: {e}")))?
                .build()
                .map_err(|e| Cause::Client(e.to_string()))?;
            let transport = StreamableHttpClientTransport::with_client(client, transport_config);
            (
                tokio::time::timeout(startup, ().serve(transport)).await,
                None,
            )
        }
    };
    if !matches!(serving, Ok(Ok(_))) {
        if let Some(pid) = pid {
            children::kill_group(pid);
        }
    }
    let service = match serving {
        Err(_) => {
            // Give the stderr reader a moment to catch the server's last words.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(handshake(
                format!(
                    "no answer within {} ms (is it an MCP server speaking JSON-RPC on stdout?)",
                    startup.as_millis()
                ),
                stderr,
            ));
        }
        Ok(Err(e)) => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(handshake(e.to_string(), stderr));
        }
        Ok(Ok(service)) => service,
    };
    let live = live(&service, pid);
    Ok(Started { live, service })
}

/// The live half of a connected service: its peer, what the handshake said, and how to end it.
pub fn live<S: Service<RoleClient>>(
    service: &RunningService<RoleClient, S>,
    pid: Option<u32>,
) -> Arc<Live> {
    let info = service.peer_info();
    Arc::new(Live {
        peer: service.peer().clone(),
        closed: Arc::new(AtomicBool::new(false)),
        pid,
        instructions: info.as_ref().and_then(|i| i.instructions.clone()),
        cancel: Mutex::new(Some(service.cancellation_token())),
    })
}
