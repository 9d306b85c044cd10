//! Error mapping: every failure names the server (never the password) and what was being done.

use codemode::StoreError;
use deadpool_postgres::PoolError;
use std::error::Error as _;

/// Maps a driver error to a [`StoreError`] naming the location and the operation.
pub(crate) trait Ctx<T> {
    /// `what` is a short phrase such as "committing".
    fn ctx(self, location: &str, what: &str) -> Result<T, StoreError>;
}

impl<T> Ctx<T> for Result<T, tokio_postgres::Error> {
    fn ctx(self, location: &str, what: &str) -> Result<T, StoreError> {
        self.map_err(|e| map_error(location, what, e))
    }
}

/// A driver error as a [`StoreError::Backend`] with its cause spelled out.
pub(crate) fn map_error(location: &str, what: &str, e: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(format!("{what} ({location}): {}", describe(&e)))
}

/// A pool error (a connection could not be had) as a [`StoreError::Backend`].
pub(crate) fn map_pool_error(location: &str, what: &str, e: PoolError) -> StoreError {
    let cause = match &e {
        PoolError::Backend(e) => describe(e),
        PoolError::Timeout(kind) => format!(
            "timed out ({kind:?}) waiting for a connection from the pool; \
             the server may be down or every connection busy"
        ),
        PoolError::Closed => "the connection pool is closed".to_string(),
        other => other.to_string(),
    };
    StoreError::Backend(format!("{what} ({location}): {cause}"))
}

/// The driver's message followed by its causes; a server error gives its SQLSTATE and hint.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!(
            "the server said {} {}: {}",
            db.severity(),
            db.code().code(),
            db.message()
        );
        if let Some(detail) = db.detail() {
            text.push_str(&format!(" ({detail})"));
        }
        if let Some(hint) = db.hint() {
            text.push_str(&format!("; hint: {hint}"));
        }
        if db.code().code() == "42501" {
            text.push_str("; the role lacks a privilege on this database or table");
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    if text.contains("Connection refused") {
        text.push_str(" (is PostgreSQL running and listening there?)");
    }
    text
}
