//! Committing a pass's changed entries during the pass, from the pass or from a write
//! finishing as a task of its own.

use super::cursor::{ReplayCursor, Stop};
use super::Runtime;
use crate::store::Commit;
use std::sync::{Arc, Mutex, MutexGuard};
use tracing::Span;

/// Locks a pass's cursor (a panic under the lock leaves it usable).
pub(super) fn lock(cursor: &Mutex<ReplayCursor>) -> MutexGuard<'_, ReplayCursor> {
    cursor.lock().unwrap_or_else(|e| e.into_inner())
}

/// What commits a pass's changed entries, owned so that a write finishing as a task of its
/// own can commit too.
pub(super) struct Flusher {
    pub runtime: Runtime,
    pub execution_id: String,
    pub cursor: Arc<Mutex<ReplayCursor>>,
    pub span: Span,
}

impl Flusher {
    /// Commits every changed entry now, while this node still holds the lease. Entries in a
    /// final state that a refused commit carried are kept for the pass's end, which records
    /// them once the run is settled (see `lost_claim`).
    pub async fn flush(&self) -> Result<(), Stop> {
        let (entries, clock) = {
            let mut cursor = lock(&self.cursor);
            (cursor.take_dirty(), cursor.take_clock())
        };
        if entries.is_empty() && clock.is_none() {
            return Ok(());
        }
        let inner = &self.runtime.inner;
        let commit = Commit {
            execution_id: self.execution_id.clone(),
            owner: Some(inner.node.clone()),
            entries,
            transition: None,
            clock,
        };
        let written = self.runtime.commit_traced(&commit, Some(&self.span)).await;
        if !matches!(written, Ok(true)) {
            let mut cursor = lock(&self.cursor);
            cursor.keep_unsaved(commit.entries);
            if commit.clock.is_some() {
                cursor.keep_clock();
            }
        }
        match written {
            Ok(true) => Ok(()),
            Ok(false) => Err(Stop::Fail(
                "this node lost its claim on the execution (expired or taken over by another node)"
                    .into(),
            )),
            Err(e) => Err(Stop::Fail(format!("the store failed: {e}"))),
        }
    }
}
