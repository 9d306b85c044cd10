//! Repeated wrong tokens from one peer: past a number of failures in a window, 429.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed from one peer in one window.
pub const MAX_FAILURES: u32 = 10;
/// The window.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Peers remembered at most; past it, windows that ended are forgotten.
const MAX_PEERS: usize = 10_000;

/// Failure counts by peer (`None`: a peer the server could not see).
#[derive(Default)]
pub struct Failures {
    peers: Mutex<HashMap<Option<IpAddr>, (u32, Instant)>>,
}

impl Failures {
    /// Seconds `peer` must wait, when it failed too often in the current window.
    pub fn retry_after(&self, peer: Option<IpAddr>) -> Option<u64> {
        let peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let (count, start) = peers.get(&peer)?;
        let left = WINDOW.checked_sub(start.elapsed())?;
        (*count >= MAX_FAILURES).then(|| left.as_secs().max(1))
    }

    /// Counts a failure of `peer`.
    pub fn fail(&self, peer: Option<IpAddr>) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if peers.len() >= MAX_PEERS {
            peers.retain(|_, (_, start)| start.elapsed() < WINDOW);
        }
        let entry = peers.entry(peer).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= WINDOW {
            *entry = (0, Instant::now());
        }
        entry.0 = entry.0.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_limited_after_its_failures_and_others_are_not() {
        let f = Failures::default();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        for _ in 0..MAX_FAILURES - 1 {
            f.fail(a);
        }
        assert_eq!(f.retry_after(a), None);
        f.fail(a);
        assert!(f.retry_after(a).is_some_and(|s| (1..=60).contains(&s)));
        assert_eq!(f.retry_after(Some(IpAddr::from([10, 0, 0, 2]))), None);
    }
}
