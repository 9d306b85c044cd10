//! Bounded batches: one pause proposes at most `max_batch` actions.
//!
//! Actions that need approval are proposed in seq order. While a pass runs, the first
//! `max_batch` calls that wait for a person (recorded `pending`, or proposed again from the
//! log) make up the batch; a later one waits in the program unrecorded, its seq taken but no
//! entry written. Seqs are handed out in the order the code makes its calls, which replay
//! keeps, so every pass puts each call in the same batch. Once the batch is decided, the next
//! pass replays it and reaches the waiting calls again as new calls: the first `max_batch` of
//! them make the next batch.

use crate::RuntimeError;

/// The default most actions one pause proposes (the reference's review capped proposals
/// at 25).
pub const DEFAULT_MAX_BATCH: usize = 25;

/// The largest `max_batch` accepted: a pause proposing more could not be shown or decided.
pub const MAX_MAX_BATCH: usize = 1_000;

/// Refuses a `max_batch` of 0 or past [`MAX_MAX_BATCH`], saying what to use instead.
pub(super) fn check_max_batch(max_batch: usize) -> Result<(), RuntimeError> {
    if max_batch == 0 {
        return Err(RuntimeError::InvalidConfig(format!(
            "max_batch is 0, which would propose no action and pause forever; use at least 1 (default {DEFAULT_MAX_BATCH})"
        )));
    }
    if max_batch > MAX_MAX_BATCH {
        return Err(RuntimeError::InvalidConfig(format!(
            "max_batch is {max_batch}, over the limit of {MAX_MAX_BATCH}: a pause that proposes that many actions cannot be shown to a model or decided by a person; use at most {MAX_MAX_BATCH} (default {DEFAULT_MAX_BATCH})"
        )));
    }
    Ok(())
}

/// Whether a call that waits for a person now joins the batch of this pass, which already
/// holds `proposed` actions, or waits in the program for a later one.
pub(super) fn joins_batch(proposed: usize, max_batch: usize) -> bool {
    proposed < max_batch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_batch_is_refused_at_zero_and_past_the_limit_naming_the_fix() {
        let cases: &[(usize, Option<&str>)] = &[
            (0, Some("use at least 1")),
            (1, None),
            (DEFAULT_MAX_BATCH, None),
            (MAX_MAX_BATCH, None),
            (MAX_MAX_BATCH + 1, Some("use at most 1000")),
            (usize::MAX, Some("use at most 1000")),
        ];
        for (max_batch, refused) in cases {
            match (check_max_batch(*max_batch), refused) {
                (Ok(()), None) => {}
                (Err(e), Some(fix)) => assert!(e.to_string().contains(fix), "{max_batch}: {e}"),
                (got, want) => panic!("{max_batch}: got {got:?}, want refusal {want:?}"),
            }
        }
    }

    #[test]
    fn the_batch_takes_the_first_max_batch_waiting_calls() {
        let joined: Vec<bool> = (0..5).map(|proposed| joins_batch(proposed, 2)).collect();
        assert_eq!(joined, [true, true, false, false, false]);
    }
}
