//! Instants as people write them: RFC 3339 or epoch milliseconds, read and written.

use chrono::{DateTime, SecondsFormat, Utc};

/// The forms [`parse_instant`] accepts, for error messages.
pub const ACCEPTED: &str =
    "RFC 3339 (e.g. 2025-01-31T09:00:00Z or 2025-01-31T10:00:00+01:00) or epoch milliseconds (e.g. 1738314000000)";

/// Why an instant did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} {value:?} is not a time: expected {ACCEPTED}")]
pub struct InstantError {
    /// The flag or parameter (`--since`, `since`).
    pub name: String,
    /// What was given.
    pub value: String,
}

/// Epoch milliseconds from RFC 3339 or a plain count of epoch milliseconds; `name` is the
/// flag or parameter named by the error.
pub fn parse_instant(name: &str, value: &str) -> Result<i64, InstantError> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(ms) = v.parse::<i64>() {
            return Ok(ms);
        }
    }
    DateTime::parse_from_rfc3339(v)
        .map(|t| t.timestamp_millis())
        .map_err(|_| InstantError {
            name: name.to_string(),
            value: value.to_string(),
        })
}

/// [`parse_instant`] for a command-line value parser (the parser names the flag).
pub fn parse_arg(value: &str) -> Result<i64, String> {
    parse_instant("", value).map_err(|_| format!("not a time: expected {ACCEPTED}"))
}

/// Epoch milliseconds as RFC 3339 in UTC, with milliseconds.
pub fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_else(|| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339_and_epoch_milliseconds() {
        assert_eq!(parse_instant("t", "1738314000000"), Ok(1_738_314_000_000));
        assert_eq!(
            parse_instant("t", "2025-01-31T09:00:00Z"),
            Ok(1_738_314_000_000)
        );
        assert_eq!(
            parse_instant("t", "2025-01-31T10:00:00.5+01:00"),
            Ok(1_738_314_000_500)
        );
        let e = parse_instant("--since", "yesterday").unwrap_err();
        assert!(e.to_string().contains("--since \"yesterday\""), "{e}");
        assert!(e.to_string().contains("RFC 3339"), "{e}");
        assert_eq!(rfc3339(1_738_314_000_500), "2025-01-31T09:00:00.500Z");
    }
}
