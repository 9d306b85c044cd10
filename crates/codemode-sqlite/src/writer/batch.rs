//! Running writes in a transaction: each caller's write as a job, a batch of them in one
//! `BEGIN IMMEDIATE` … `COMMIT`, each under a savepoint of its own, and the answers given
//! once the transaction ended.

use crate::codec::Ctx;
use codemode::StoreError;
use rusqlite::Connection;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tokio::sync::oneshot;

/// A write as sent to the thread: it runs inside the batch's transaction.
pub(super) trait Job: Send {
    /// Runs the write on `conn` (inside a transaction, under a savepoint when not alone).
    fn run(self: Box<Self>, conn: &Connection, loc: &str) -> Box<dyn Done>;
    /// Answers the caller with `e` without running the write.
    fn refuse(self: Box<Self>, e: StoreError);
}

/// A write that has run and waits for its transaction's end.
pub(super) trait Done {
    /// Whether the write failed (its savepoint is rolled back, its caller gets its error).
    fn failed(&self) -> bool;
    /// Answers the caller once the transaction ended: `Ok` when it committed.
    fn finish(self: Box<Self>, committed: Result<(), &StoreError>);
}

pub(super) type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// One caller's write and where its answer goes.
pub(super) struct Op<F, T> {
    /// The write.
    pub(super) f: F,
    /// Where its answer goes.
    pub(super) reply: Reply<T>,
}

impl<F, T> Job for Op<F, T>
where
    F: FnOnce(&Connection, &str) -> Result<T, StoreError> + Send,
    T: Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection, loc: &str) -> Box<dyn Done> {
        let Op { f, reply } = *self;
        Box::new(Outcome {
            result: f(conn, loc),
            reply,
        })
    }

    fn refuse(self: Box<Self>, e: StoreError) {
        let _ = self.reply.send(Err(e));
    }
}

/// A write's result, kept until its transaction ends.
struct Outcome<T> {
    result: Result<T, StoreError>,
    reply: Reply<T>,
}

impl<T> Done for Outcome<T> {
    fn failed(&self) -> bool {
        self.result.is_err()
    }

    fn finish(self: Box<Self>, committed: Result<(), &StoreError>) {
        let answer = match (self.result, committed) {
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(copy(e)),
            (Ok(value), Ok(())) => Ok(value),
        };
        let _ = self.reply.send(answer);
    }
}

/// The same error again, for each caller of a batch that failed as a whole.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::Corrupt { location, detail } => StoreError::Corrupt {
            location: location.clone(),
            detail: detail.clone(),
        },
        StoreError::NewerSchema {
            location,
            found,
            supported,
        } => StoreError::NewerSchema {
            location: location.clone(),
            found: *found,
            supported: *supported,
        },
        StoreError::Decode(s) => StoreError::Decode(s.clone()),
        StoreError::Backend(s) => StoreError::Backend(s.clone()),
        StoreError::IllegalTransition { from, to } => StoreError::IllegalTransition {
            from: *from,
            to: *to,
        },
    }
}

/// Rolls back the transaction open on `conn`, if any; says whether there was one.
pub(super) fn roll_back_open(conn: &Connection) -> rusqlite::Result<bool> {
    if conn.is_autocommit() {
        return Ok(false);
    }
    conn.execute_batch("ROLLBACK").map(|()| true)
}

pub(super) fn exec(conn: &Connection, loc: &str, sql: &str, doing: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .ctx(loc, doing)
}

/// Runs `batch` in one transaction (more when a write's error ended one early); gives back
/// how each ended, for answering the callers once the connection is free.
pub(super) fn commit_batch(
    conn: &Connection,
    loc: &str,
    mut batch: VecDeque<Box<dyn Job>>,
) -> Vec<Ended> {
    let mut ended = Vec::new();
    while !batch.is_empty() {
        if let Err(e) = exec(conn, loc, "BEGIN IMMEDIATE", "starting a transaction") {
            for job in batch {
                job.refuse(copy(&e));
            }
            return ended;
        }
        ended.push(commit_begun(conn, loc, &mut batch));
    }
    ended
}

/// A transaction that ended: its writes and how it ended (`Ok` when it committed).
pub(super) struct Ended {
    done: Vec<Box<dyn Done>>,
    result: Result<(), StoreError>,
}

impl Ended {
    /// Answers every caller of the transaction.
    pub(super) fn answer(self) {
        for d in self.done {
            d.finish(self.result.as_ref().map(|_| ()));
        }
    }
}

/// Runs the writes of `batch` in the transaction begun on `conn` and ends it; leaves in
/// `batch` the writes after one whose error ended it early.
pub(super) fn commit_begun(
    conn: &Connection,
    loc: &str,
    batch: &mut VecDeque<Box<dyn Job>>,
) -> Ended {
    // A write alone needs no savepoint: its failure rolls back the transaction.
    let alone = batch.len() == 1;
    let mut done: Vec<Box<dyn Done>> = Vec::with_capacity(batch.len());
    let mut lost = None;
    while let Some(job) = batch.pop_front() {
        match run_one(conn, loc, job, alone) {
            Step::Kept(d) => done.push(d),
            Step::Skipped => {}
            Step::Lost(d, e) => {
                done.extend(d);
                lost = Some(e);
                break;
            }
        }
    }
    let result = match lost {
        Some(e) => Err(e),
        // A write alone failed and its transaction was rolled back.
        None if conn.is_autocommit() => Ok(()),
        None => exec(conn, loc, "COMMIT", "committing"),
    };
    if result.is_err() {
        if let Err(e) = roll_back_open(conn) {
            tracing::warn!(store = %loc, error = %e, "rolling back a failed batch failed");
        }
    }
    Ended { done, result }
}

/// What became of one write.
enum Step {
    /// Ran (or failed and was rolled back alone); answered when the transaction ends.
    Kept(Box<dyn Done>),
    /// Panicked and was rolled back alone; its caller learns it from the dropped reply.
    Skipped,
    /// The transaction is gone: every write of it fails with this error (a write that
    /// failed on its own still gets its own error).
    Lost(Option<Box<dyn Done>>, StoreError),
}

fn run_one(conn: &Connection, loc: &str, job: Box<dyn Job>, alone: bool) -> Step {
    if !alone {
        if let Err(e) = exec(conn, loc, "SAVEPOINT write", "starting a savepoint") {
            job.refuse(copy(&e));
            return Step::Lost(None, e);
        }
    }
    // `None`: the write panicked (its reply is dropped, so its caller gets an error).
    let ran = catch_unwind(AssertUnwindSafe(|| job.run(conn, loc))).ok();
    if conn.is_autocommit() {
        // An error that ends the whole transaction (SQLite does so on I/O errors and a full
        // disk): the writes before this one are gone too.
        let e = StoreError::Backend(format!(
            "a write's error ended the transaction it shared with others ({loc})"
        ));
        return Step::Lost(ran, e);
    }
    let failed = ran.as_ref().is_none_or(|d| d.failed());
    let settled = match (failed, alone) {
        (false, true) => Ok(()),
        (false, false) => exec(conn, loc, "RELEASE write", "ending a savepoint"),
        (true, true) => roll_back_open(conn).map(|_| ()).ctx(loc, "rolling back"),
        (true, false) => exec(conn, loc, "ROLLBACK TO write", "rolling back a savepoint")
            .and_then(|()| exec(conn, loc, "RELEASE write", "ending a savepoint")),
    };
    match (ran, settled) {
        (Some(d), Ok(())) => Step::Kept(d),
        (None, Ok(())) => Step::Skipped,
        (d, Err(e)) => Step::Lost(d, e),
    }
}
