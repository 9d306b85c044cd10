//! Every process group this crate started, so that the host can stop them all when it exits.
//!
//! Each stdio server leads its own process group (its own children, `npx`'s grandchildren,
//! join it). A group is recorded while it is spawned and forgotten once it is gone; after
//! [`stop_all_servers`] no new server starts, so a watcher cannot bring one back mid-exit.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Process group ids of servers that may still be running.
static GROUPS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// Set once the host is exiting: no server starts after it.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Why a server was not started.
#[derive(Debug)]
pub(crate) enum SpawnRefused {
    /// The host is exiting.
    Stopping,
    /// The spawn itself failed.
    Io(std::io::Error),
}

/// Runs `spawn` (which starts a process group and returns its id) and records the group, unless
/// the host is exiting. Holding the lock across the spawn means [`stop_all_servers`] sees
/// every group started before it.
pub(crate) fn spawn_recorded<T>(
    spawn: impl FnOnce() -> std::io::Result<(T, Option<u32>)>,
) -> Result<(T, Option<u32>), SpawnRefused> {
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    if STOPPING.load(Ordering::SeqCst) {
        return Err(SpawnRefused::Stopping);
    }
    let (value, pgid) = spawn().map_err(SpawnRefused::Io)?;
    if let Some(pgid) = pgid {
        groups.insert(pgid);
    }
    Ok((value, pgid))
}

/// Kills what is left of a server's process group and forgets it.
pub(crate) fn kill_group(pgid: u32) {
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    if groups.remove(&pgid) {
        signal_group(pgid, Signal::Kill);
    }
}

/// Stops every MCP server this process started, with their process groups, and starts no
/// more: each group gets SIGTERM, and what is still there after `grace` gets SIGKILL. Returns
/// how many groups were signalled. For the host's exit path (SIGTERM, Ctrl-C); it blocks for at
/// most `grace` plus a few milliseconds.
pub fn stop_all_servers(grace: Duration) -> usize {
    let groups: Vec<u32> = {
        let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        STOPPING.store(true, Ordering::SeqCst);
        std::mem::take(&mut *groups).into_iter().collect()
    };
    for &pgid in &groups {
        signal_group(pgid, Signal::Term);
    }
    let deadline = Instant::now() + grace;
    let mut left: Vec<u32> = groups.clone();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        left.retain(|&pgid| group_alive(pgid));
    }
    for pgid in left {
        signal_group(pgid, Signal::Kill);
    }
    groups.len()
}

/// The process groups of servers that may still be running.
pub fn server_process_groups() -> Vec<u32> {
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .copied()
        .collect()
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

fn signal_group(pgid: u32, signal: Signal) {
    #[cfg(unix)]
    if let Some(group) = group_pid(pgid) {
        let sig = match signal {
            Signal::Term => rustix::process::Signal::TERM,
            Signal::Kill => rustix::process::Signal::KILL,
        };
        let _ = rustix::process::kill_process_group(group, sig);
    }
    #[cfg(not(unix))]
    let _ = (pgid, signal);
}

/// The group's id as a process id, or `None` for ids that name no child's group (0, 1).
#[cfg(unix)]
fn group_pid(pgid: u32) -> Option<rustix::process::Pid> {
    let id = i32::try_from(pgid).ok().filter(|id| *id > 1)?;
    rustix::process::Pid::from_raw(id)
}

/// Whether any process of the group still runs. On Linux a zombie (exited, not yet reaped)
/// does not count; elsewhere it does until it is reaped.
fn group_alive(pgid: u32) -> bool {
    #[cfg(unix)]
    if let Some(group) = group_pid(pgid) {
        // Signal 0 only checks that the group exists.
        if rustix::process::test_kill_process_group(group).is_err() {
            return false;
        }
        #[cfg(target_os = "linux")]
        return linux_group_has_live_member(pgid);
        #[cfg(not(target_os = "linux"))]
        return true;
    }
    false
}

/// Whether `/proc` lists a process of group `pgid` that is not a zombie.
#[cfg(target_os = "linux")]
fn linux_group_has_live_member(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // After the command's closing parenthesis: state, ppid, pgrp, …
            let mut fields = stat.rsplit(')').next().unwrap_or("").split_whitespace();
            let state = fields.next().unwrap_or("");
            let pgrp = fields.nth(1).and_then(|p| p.parse::<u32>().ok());
            pgrp == Some(pgid) && !matches!(state, "Z" | "X")
        })
}
