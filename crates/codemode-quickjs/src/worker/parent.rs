//! [`ProcessExecutor`]: each pass in a sandbox process, killed at the deadline.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use codemode::{ExecuteRequest, ExecuteResult, Executor, Host, HostCall, HostReply, PassEnd};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use tokio::io::AsyncWriteExt;
use tokio::time::{sleep_until, timeout_at, Instant};

use super::procs::{describe_exit, Lease, Proc, Shared};
use super::protocol::{
    encode_into, fingerprint, FrameError, FromChild, Limits, ToChild, WireNamespace,
};
use super::{ProbeReport, ProcessOptions, SandboxStartError};
use crate::globals::RESERVED_GLOBALS;
use crate::options::QuickJsOptions;
use crate::pass::{time_limit_message, CANCELLED_MESSAGE};

/// How often a pass checks the host's stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);
/// Console bytes a process may send beyond the limit (the note that says it was cut).
const CONSOLE_SLACK: usize = 4096;

/// Runs each pass in a sandbox process of its own (one pass at a time per process), with the
/// same limits and behaviour as [`crate::QuickJsExecutor`]; a process that does not answer
/// by the deadline (plus a short grace), or soon after a cancel, is killed and replaced.
pub struct ProcessExecutor {
    options: QuickJsOptions,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ProcessExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessExecutor")
            .field("options", &self.options)
            .field("process", &self.shared.process)
            .finish_non_exhaustive()
    }
}

fn failed(message: impl Into<String>, logs: Vec<String>) -> ExecuteResult {
    ExecuteResult {
        end: PassEnd::Failed(message.into()),
        logs,
    }
}

impl ProcessExecutor {
    /// Starts the warm processes (at least one) and checks that a process is confined (it
    /// cannot open a socket, a file or a process). Must be called inside a tokio runtime with
    /// its I/O and time drivers on; an error says why no process can serve.
    pub async fn start(
        options: QuickJsOptions,
        process: ProcessOptions,
    ) -> Result<Self, SandboxStartError> {
        let limits = Limits {
            wall_time_ms: options.wall_time.as_millis().min(u64::MAX as u128) as u64,
            memory_limit: options.memory_limit,
            max_stack_size: options.max_stack_size,
            max_console_bytes: options.max_console_bytes,
            max_code_bytes: options.max_code_bytes,
        };
        let shared = Shared::new(limits, process);
        let executor = ProcessExecutor { options, shared };
        let report = executor.probe().await?;
        if !report.all_refused() {
            return Err(SandboxStartError::NotConfined {
                program: executor.shared.process.command.program.clone(),
                reason: format!("a confined process could still reach the system ({report:?})"),
            });
        }
        while executor.shared.live() < executor.shared.process.warm {
            let proc = executor.shared.spawn().await?;
            executor.shared.put_idle(proc);
        }
        executor.shared.start_reaper();
        Ok(executor)
    }

    /// The limits this executor applies.
    pub fn options(&self) -> &QuickJsOptions {
        &self.options
    }

    /// Sandbox processes alive now (idle or running a pass).
    pub fn processes(&self) -> usize {
        self.shared.live()
    }

    /// Has a sandbox process try to open a socket, a file and a process, and says what each
    /// attempt got.
    pub async fn probe(&self) -> Result<ProbeReport, SandboxStartError> {
        let mut lease = self.shared.lease().await?;
        let program = self.shared.process.command.program.clone();
        let limit = self.shared.process.start_timeout;
        let Some(proc) = lease.proc() else {
            return Err(SandboxStartError::Handshake {
                program,
                reason: "no process".into(),
            });
        };
        let asked = async {
            proc.send(&ToChild::Probe).await.ok()?;
            match proc.reader.next::<FromChild>().await {
                Ok(Some(FromChild::Probed { socket, open, fork })) => {
                    Some(ProbeReport { socket, open, fork })
                }
                _ => None,
            }
        };
        match tokio::time::timeout(limit, asked).await {
            Ok(Some(report)) => {
                lease.keep = true;
                Ok(report)
            }
            _ => Err(SandboxStartError::Handshake {
                program,
                reason: "it did not answer the confinement probe".into(),
            }),
        }
    }
}

#[async_trait]
impl Executor for ProcessExecutor {
    async fn execute(&self, request: ExecuteRequest, host: Arc<dyn Host>) -> ExecuteResult {
        let mut lease = match self.shared.lease().await {
            Ok(lease) => lease,
            Err(e) => {
                return failed(
                    format!("The sandbox could not start ({e}); the code did not run. This is a fault of the server, not of the code."),
                    Vec::new(),
                )
            }
        };
        run(&mut lease, request, &host, &self.shared).await
    }

    fn reserved_globals(&self) -> &[&str] {
        RESERVED_GLOBALS
    }

    fn pass_deadline(&self) -> Option<Duration> {
        Some(self.options.wall_time)
    }
}

/// The pass failed because the process broke the protocol: it is killed.
async fn reject(proc: &mut Proc, what: String, logs: Vec<String>) -> ExecuteResult {
    proc.kill().await;
    failed(
        format!("The sandbox process sent {what}; it was stopped and replaced, and the pass failed. Run the code again."),
        logs,
    )
}

/// The process's output closed in the middle of the pass.
async fn died(proc: &mut Proc, logs: Vec<String>) -> ExecuteResult {
    let status = proc.exit_status().await;
    failed(
        format!(
            "The sandbox process died during the pass ({}); the pass was stopped and a new process takes its place. If this happens again, the code may need too much memory: work on smaller pieces of data.",
            describe_exit(status)
        ),
        logs,
    )
}

async fn run(
    lease: &mut Lease,
    request: ExecuteRequest,
    host: &Arc<dyn Host>,
    shared: &Shared,
) -> ExecuteResult {
    let wall_time = Duration::from_millis(shared.limits.wall_time_ms);
    let kill_at = Instant::from_std(codemode::clock::instant_after(
        std::time::Instant::now(),
        wall_time.saturating_add(shared.process.kill_grace),
    ));
    let log_cap = shared
        .limits
        .max_console_bytes
        .saturating_add(CONSOLE_SLACK);
    let Some(proc) = lease.proc() else {
        return failed("no sandbox process", Vec::new());
    };
    let wire: Vec<WireNamespace> = request
        .namespaces
        .iter()
        .map(WireNamespace::from_namespace)
        .collect();
    let print = fingerprint(&wire);
    let namespaces = (proc.sent != Some(print)).then_some(wire);
    proc.sent = None;
    let pass = ToChild::Pass {
        code: request.code,
        namespaces,
        clock: request.clock.tape.now,
        random_seed: request.clock.random_seed,
    };
    match timeout_at(kill_at, proc.send(&pass)).await {
        Ok(Ok(())) => proc.sent = Some(print),
        Ok(Err(_)) => return died(proc, Vec::new()).await,
        Err(_) => {
            proc.kill().await;
            return failed(time_limit_message(wall_time), Vec::new());
        }
    }
    let stop = host.stop_flag();
    let mut cancelled = false;
    // Calls the code made and the sandbox has not polled yet, then those it has.
    let mut made = std::collections::HashMap::new();
    let mut calls = FuturesUnordered::new();
    // Reply frames not yet written: written as the pipe takes them, while the process's
    // frames are read (a process writing console lines while a large reply waits for it
    // cannot block its parent, nor the parent it).
    let mut out: Vec<u8> = Vec::new();
    let mut written = 0usize;
    let mut logs: Vec<String> = Vec::new();
    let mut log_bytes = 0usize;
    let mut poll = tokio::time::interval(STOP_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let give_up = sleep_until(kill_at);
    tokio::pin!(give_up);
    loop {
        tokio::select! {
            biased;
            frame = proc.reader.next::<FromChild>() => match frame {
                Ok(Some(FromChild::Call { id, namespace, method, args })) => {
                    // Made now, in the order the code made the calls; started once polled.
                    let future = host.clone().call_shared(HostCall { namespace, method, args });
                    made.insert(id, future);
                }
                Ok(Some(FromChild::Polled { id })) => {
                    let Some(mut future) = made.remove(&id) else {
                        return reject(proc, format!("a poll of call {id}, which it never made"), logs).await;
                    };
                    // A reply ready at once (a replayed call) is answered now; any other is
                    // polled again, with this task's waker, in `calls`.
                    match (&mut future).now_or_never() {
                        Some(reply) => reply_into(&mut out, id, reply),
                        None => calls.push(async move { (id, future.await) }),
                    }
                }
                Ok(Some(FromChild::Clock(runs))) => host.clock_readings(&runs),
                Ok(Some(FromChild::Console(line))) => {
                    log_bytes = log_bytes.saturating_add(line.len());
                    if log_bytes > log_cap {
                        return reject(proc, "more console output than its limit".into(), logs).await;
                    }
                    host.console(&line);
                    logs.push(line);
                }
                Ok(Some(FromChild::Done { end, spent })) => {
                    // Replies the pass did not wait for are dropped, but the rest of one begun
                    // must reach the process (which drops it) before its next pass.
                    let whole = written == 0
                        || matches!(
                            timeout_at(kill_at, proc.stdin.write_all(&out[written..])).await,
                            Ok(Ok(()))
                        );
                    lease.keep = !spent && whole;
                    return end.into_result(logs);
                }
                Ok(Some(_)) => {
                    return reject(proc, "a message out of place".into(), logs).await;
                }
                Ok(None) | Err(FrameError::Io(_)) => return died(proc, logs).await,
                Err(e) => return reject(proc, e.to_string(), logs).await,
            },
            Some((id, reply)) = calls.next(), if !calls.is_empty() => {
                reply_into(&mut out, id, reply);
            }
            wrote = proc.stdin.write(&out[written..]), if written < out.len() => match wrote {
                Ok(n) if n > 0 => {
                    written += n;
                    if written == out.len() {
                        out.clear();
                        written = 0;
                    }
                }
                _ => return died(proc, logs).await,
            },
            _ = &mut give_up => {
                proc.kill().await;
                let message = match cancelled {
                    true => CANCELLED_MESSAGE.to_string(),
                    false => time_limit_message(wall_time),
                };
                return failed(message, logs);
            }
            _ = poll.tick(), if stop.is_some() => {
                if cancelled {
                    // Again: a signal that came just before the process's wait blocked would
                    // not have woken it.
                    proc.cancel();
                } else if stop.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed)) {
                    cancelled = true;
                    proc.cancel();
                    let at = (Instant::now() + shared.process.cancel_grace).min(kill_at);
                    give_up.as_mut().reset(at);
                }
            }
        }
    }
}

/// Appends the reply to call `id` to the frames to write.
fn reply_into(out: &mut Vec<u8>, id: u64, reply: HostReply) {
    encode_into(
        out,
        &ToChild::Reply {
            id,
            reply: reply.into(),
        },
    );
}
