//! The writer thread: it owns the write connection and commits every caller's write waiting
//! for it in one `BEGIN IMMEDIATE` transaction (group commit), each write in a savepoint of
//! its own, and wakes each caller once the transaction's `COMMIT` has returned.

use crate::codec::Ctx;
use codemode::StoreError;
use rusqlite::Connection;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// The most writes one transaction takes; the rest wait for the next one.
const MAX_BATCH: usize = 512;

/// A write as sent to the thread: it runs inside the batch's transaction.
trait Job: Send {
    /// Runs the write on `conn` (inside a transaction, under a savepoint when not alone).
    fn run(self: Box<Self>, conn: &Connection, loc: &str) -> Box<dyn Done>;
    /// Answers the caller with `e` without running the write.
    fn refuse(self: Box<Self>, e: StoreError);
}

/// A write that has run and waits for its transaction's end.
trait Done {
    /// Whether the write failed (its savepoint is rolled back, its caller gets its error).
    fn failed(&self) -> bool;
    /// Answers the caller once the transaction ended: `Ok` when it committed.
    fn finish(self: Box<Self>, committed: Result<(), &StoreError>);
}

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// One caller's write and where its answer goes.
struct Op<F, T> {
    f: F,
    reply: Reply<T>,
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
    }
}

/// The write connection (shared with `with_connection`) and the thread that commits.
pub(crate) struct Writer {
    jobs: Option<mpsc::Sender<Box<dyn Job>>>,
    conn: Arc<Mutex<Connection>>,
    thread: Option<JoinHandle<()>>,
    loc: Arc<str>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("loc", &self.loc).finish()
    }
}

impl Writer {
    /// Starts the thread that owns `conn`.
    pub fn start(conn: Connection, loc: Arc<str>) -> Result<Writer, StoreError> {
        let conn = Arc::new(Mutex::new(conn));
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        let thread = {
            let (conn, for_thread) = (conn.clone(), loc.clone());
            std::thread::Builder::new()
                .name("codemode-sqlite-writer".into())
                .spawn(move || serve(&queue, &conn, &for_thread))
                .map_err(|e| {
                    StoreError::Backend(format!("cannot start the writer thread for {loc}: {e}"))
                })?
        };
        Ok(Writer {
            jobs: Some(jobs),
            conn,
            thread: Some(thread),
            loc,
        })
    }

    /// Runs `f` in the next transaction of the writer thread; answers once it committed.
    /// An `Err` from `f` rolls back `f`'s own writes alone. A refusal (`Ok` with nothing
    /// written, such as a compare-and-set that matched no row) commits nothing of its own.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&Connection, &str) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Op { f, reply });
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        if !matches!(sent, Some(Ok(()))) {
            return Err(self.stopped());
        }
        answer.await.unwrap_or_else(|_| Err(self.stopped()))
    }

    /// The connection, locked: the thread holds the lock for one transaction at a time.
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    fn stopped(&self) -> StoreError {
        StoreError::Backend(format!(
            "the writer of {} stopped before answering (a bug in a write)",
            self.loc
        ))
    }
}

impl Drop for Writer {
    /// Lets the thread finish the writes already sent, then closes the connection.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Locks the connection. After a panic under the lock, a transaction left open is rolled
/// back first.
pub(crate) fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|poisoned| {
        let conn = poisoned.into_inner();
        let _ = roll_back_open(&conn);
        conn
    })
}

/// Rolls back the transaction open on `conn`, if any; says whether there was one.
pub(crate) fn roll_back_open(conn: &Connection) -> rusqlite::Result<bool> {
    if conn.is_autocommit() {
        return Ok(false);
    }
    conn.execute_batch("ROLLBACK").map(|()| true)
}

/// The thread: takes whatever is waiting (at least one write) and commits it as one.
fn serve(queue: &mpsc::Receiver<Box<dyn Job>>, conn: &Mutex<Connection>, loc: &str) {
    while let Ok(first) = queue.recv() {
        // Writes sent while the lock is taken (by `with_connection`) join this batch.
        let conn = lock(conn);
        let mut batch = VecDeque::from([first]);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push_back(job),
                Err(_) => break,
            }
        }
        commit_batch(&conn, loc, batch);
    }
}

fn exec(conn: &Connection, loc: &str, sql: &str, doing: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .ctx(loc, doing)
}

/// Runs `batch` in one transaction (more when a write's error ended one early) and answers
/// every caller after the `COMMIT`.
fn commit_batch(conn: &Connection, loc: &str, mut batch: VecDeque<Box<dyn Job>>) {
    while !batch.is_empty() {
        if let Err(e) = exec(conn, loc, "BEGIN IMMEDIATE", "starting a transaction") {
            for job in batch {
                job.refuse(copy(&e));
            }
            return;
        }
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
        let ended = match lost {
            Some(e) => Err(e),
            // A write alone failed and its transaction was rolled back.
            None if conn.is_autocommit() => Ok(()),
            None => exec(conn, loc, "COMMIT", "committing"),
        };
        if ended.is_err() {
            if let Err(e) = roll_back_open(conn) {
                tracing::warn!(store = %loc, error = %e, "rolling back a failed batch failed");
            }
        }
        for d in done {
            d.finish(ended.as_ref().map(|_| ()));
        }
    }
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
