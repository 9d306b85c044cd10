//! A read snapshot on cached `BEGIN`/`COMMIT` statements (the writer thread runs its own
//! transactions): rusqlite's own `Transaction` parses them again each time, which is a
//! measurable share of a small query.

use crate::codec::Ctx;
use codemode::StoreError;
use rusqlite::Connection;
use std::ops::Deref;

/// An open transaction; rolled back on drop unless committed.
pub(crate) struct Tx<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Tx<'c> {
    /// `BEGIN`: a read snapshot, so several queries see one state.
    pub fn read(conn: &'c Connection, loc: &str) -> Result<Self, StoreError> {
        Self::begin(conn, loc, "BEGIN")
    }

    fn begin(conn: &'c Connection, loc: &str, sql: &str) -> Result<Self, StoreError> {
        conn.prepare_cached(sql)
            .and_then(|mut s| s.execute([]))
            .ctx(loc, "starting a transaction")?;
        Ok(Tx { conn, open: true })
    }

    /// Commits; on failure the transaction is rolled back when the guard drops.
    pub fn commit(mut self, loc: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
            .ctx(loc, "committing")?;
        self.open = false;
        Ok(())
    }
}

impl Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            let rolled = self
                .conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut s| s.execute([]));
            if let Err(e) = rolled {
                tracing::warn!(error = %e, "rolling back a store transaction failed");
            }
        }
    }
}
