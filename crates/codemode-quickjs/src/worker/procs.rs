//! The sandbox processes of one [`super::ProcessExecutor`]: started ahead, lent to one pass at
//! a time, killed when a pass goes wrong, replaced.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::protocol::{encode, FrameReader, FromChild, Limits, ToChild};
use super::{sys, ProcessOptions, SandboxStartError};

/// One sandbox process.
pub(crate) struct Proc {
    child: Child,
    /// Its process id, while it is not reaped.
    pid: Option<u32>,
    /// Its input.
    pub stdin: ChildStdin,
    /// Its frames.
    pub reader: FrameReader<ChildStdout>,
    /// The fingerprint of the namespaces it holds (`None`: send them with the next pass).
    pub sent: Option<u64>,
    idle_since: Instant,
    _live: Live,
}

/// Counts a process among the live ones while it exists.
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Proc {
    /// Writes one frame.
    pub(crate) async fn send(&mut self, frame: &ToChild) -> io::Result<()> {
        self.stdin.write_all(&encode(frame)).await?;
        self.stdin.flush().await
    }

    /// Asks the process to stop its pass at once (a signal: see `sys.rs`).
    pub(crate) fn cancel(&self) {
        if let Some(pid) = self.pid {
            sys::signal_cancel(pid);
        }
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub(crate) async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await;
    }

    /// How the process ended, once its output closed (killed if it lingers).
    pub(crate) async fn exit_status(&mut self) -> Option<ExitStatus> {
        match tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                self.kill().await;
                None
            }
        }
    }
}

/// Says how a process ended, for a message.
pub(crate) fn describe_exit(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => match (s.signal(), s.code()) {
            (Some(9), _) => {
                "killed by signal 9, SIGKILL: the system may have run out of memory".into()
            }
            (Some(sig), _) => format!("killed by signal {sig}"),
            (None, Some(code)) => format!("exited with code {code}"),
            (None, None) => "ended".into(),
        },
        None => "its end could not be read".into(),
    }
}

/// What the executor's passes share: the limits, the idle processes and the counts.
pub(crate) struct Shared {
    pub limits: Limits,
    pub process: ProcessOptions,
    /// The largest frame accepted from a process.
    pub frame_max: usize,
    idle: Mutex<Vec<Proc>>,
    slots: Arc<Semaphore>,
    live: Arc<AtomicUsize>,
    starting: AtomicUsize,
}

impl Shared {
    pub(crate) fn new(limits: Limits, process: ProcessOptions) -> Arc<Self> {
        let frame_max = if limits.memory_limit == 0 {
            1 << 30
        } else {
            limits
                .memory_limit
                .saturating_mul(2)
                .saturating_add(1 << 20)
        };
        Arc::new(Shared {
            slots: Arc::new(Semaphore::new(process.max_processes.max(1))),
            limits,
            process,
            frame_max,
            idle: Mutex::new(Vec::new()),
            live: Arc::new(AtomicUsize::new(0)),
            starting: AtomicUsize::new(0),
        })
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Proc>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Processes alive now.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Starts a process and waits until it is confined and ready.
    pub(crate) async fn spawn(&self) -> Result<Proc, SandboxStartError> {
        let program = self.process.command.program.clone();
        let handshake = |reason: String| SandboxStartError::Handshake {
            program: program.clone(),
            reason,
        };
        let mut child = Command::new(&self.process.command.program)
            .args(&self.process.command.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SandboxStartError::Spawn {
                program: program.clone(),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(handshake("its stdin or stdout is missing".into()));
        };
        self.live.fetch_add(1, Ordering::SeqCst);
        let mut proc = Proc {
            pid: child.id(),
            child,
            stdin,
            reader: FrameReader::new(stdout, self.frame_max),
            sent: None,
            idle_since: Instant::now(),
            _live: Live(self.live.clone()),
        };
        let not_ready = |status| {
            handshake(format!(
                "it {} before it was ready (is it a program that runs the sandbox worker with these arguments?)",
                describe_exit(status)
            ))
        };
        let ready = async {
            if let Err(e) = proc.send(&ToChild::Init(self.limits.clone())).await {
                // A closed pipe means the process ended (or closed its input): say how it ended.
                return Err(if e.kind() == io::ErrorKind::BrokenPipe {
                    not_ready(proc.exit_status().await)
                } else {
                    handshake(format!("cannot write to it: {e}"))
                });
            }
            match proc.reader.next::<FromChild>().await {
                Ok(Some(FromChild::Ready { .. })) => Ok(()),
                Ok(Some(FromChild::Refused(reason))) => Err(SandboxStartError::NotConfined {
                    program: program.clone(),
                    reason,
                }),
                Ok(Some(_)) => Err(handshake("its first message was not Ready".into())),
                Ok(None) => Err(not_ready(proc.exit_status().await)),
                Err(e) => Err(handshake(format!("it sent {e}"))),
            }
        };
        match tokio::time::timeout(self.process.start_timeout, ready).await {
            Ok(Ok(())) => Ok(proc),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(handshake(format!(
                "it did not answer within {} ms",
                self.process.start_timeout.as_millis()
            ))),
        }
    }

    /// Keeps a process for later passes.
    pub(crate) fn put_idle(&self, mut proc: Proc) {
        proc.idle_since = Instant::now();
        self.idle().push(proc);
    }

    /// A process for one pass: an idle one, or a new one; waits while `max_processes` run.
    pub(crate) async fn lease(self: &Arc<Self>) -> Result<Lease, SandboxStartError> {
        let permit = self.slots.clone().acquire_owned().await.ok();
        self.prune();
        let idle = self.idle().pop();
        let proc = match idle {
            Some(proc) => proc,
            None => self.spawn().await?,
        };
        Ok(Lease {
            shared: self.clone(),
            proc: Some(proc),
            keep: false,
            _permit: permit,
        })
    }

    /// Ends idle processes beyond the warm ones that have waited longer than the idle timeout.
    pub(crate) fn prune(&self) {
        let mut idle = self.idle();
        let timeout = self.process.idle_timeout;
        while self.live() > self.process.warm {
            // The oldest idle process is first (each is pushed when it goes idle).
            match idle.first() {
                Some(p) if p.idle_since.elapsed() >= timeout => drop(idle.remove(0)),
                _ => break,
            }
        }
    }

    /// Starts processes in the background until the warm ones are there again.
    pub(crate) fn replenish(self: &Arc<Self>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        while self.live() + self.starting.load(Ordering::SeqCst) < self.process.warm {
            self.starting.fetch_add(1, Ordering::SeqCst);
            let shared = self.clone();
            handle.spawn(async move {
                let started = shared.spawn().await;
                shared.starting.fetch_sub(1, Ordering::SeqCst);
                if let Ok(proc) = started {
                    shared.put_idle(proc);
                }
            });
        }
    }

    /// Prunes idle processes every so often while the executor lives.
    pub(crate) fn start_reaper(self: &Arc<Self>) {
        let weak: Weak<Shared> = Arc::downgrade(self);
        let every = (self.process.idle_timeout / 2)
            .clamp(Duration::from_millis(10), Duration::from_secs(5));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(shared) = weak.upgrade() else { return };
                shared.prune();
            }
        });
    }
}

/// A process lent to one pass: back to the idle ones if `keep`, else killed and replaced.
pub(crate) struct Lease {
    shared: Arc<Shared>,
    proc: Option<Proc>,
    /// Set when the pass ended cleanly and the process may run another.
    pub keep: bool,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Lease {
    /// The process.
    pub(crate) fn proc(&mut self) -> Option<&mut Proc> {
        self.proc.as_mut()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(proc) = self.proc.take() else { return };
        if self.keep {
            self.shared.put_idle(proc);
        } else {
            // Killed on drop (`kill_on_drop`), and reaped by tokio.
            drop(proc);
            self.shared.replenish();
        }
    }
}
