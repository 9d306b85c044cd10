//! Time arithmetic that saturates: a deadline or a lease built from any duration, however
//! large (a `timeout_ms` of 2^64-1), is far in the future, never a wrapped or panicking sum.

use std::time::{Duration, Instant};

/// The farthest deadline handed out: about a century, well inside every clock's range.
pub const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The instant `d` after `from`, or [`FAR_FUTURE`] after it when `d` is longer.
pub fn instant_after(from: Instant, d: Duration) -> Instant {
    from + d.min(FAR_FUTURE)
}

/// Milliseconds since the epoch `d` after `now_ms`, saturating at `i64::MAX`.
pub fn ms_after(now_ms: i64, d: Duration) -> i64 {
    now_ms.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_durations_saturate() {
        let now = Instant::now();
        assert_eq!(instant_after(now, Duration::MAX), now + FAR_FUTURE);
        assert_eq!(
            instant_after(now, Duration::from_millis(u64::MAX)),
            now + FAR_FUTURE
        );
        assert_eq!(
            instant_after(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
        assert_eq!(ms_after(1_000, Duration::MAX), i64::MAX);
        assert_eq!(ms_after(1_000, Duration::from_millis(u64::MAX)), i64::MAX);
        assert_eq!(ms_after(i64::MAX - 1, Duration::from_secs(1)), i64::MAX);
        assert_eq!(ms_after(1_000, Duration::from_millis(500)), 1_500);
    }
}
