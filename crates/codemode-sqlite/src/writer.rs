//! The writer thread: it owns the write connection and commits every caller's write waiting
//! for it in one `BEGIN IMMEDIATE` transaction (group commit), each write in a savepoint of
//! its own, and wakes each caller once the transaction's `COMMIT` has returned.
//!
//! A write runs on its caller's thread instead, as a transaction of its own, when nothing
//! could make that thread wait: no write is queued, the connection is free, the commit does
//! not `fsync` (`synchronous=NORMAL`), the file's write lock is free at once (no busy wait
//! for another process) and checkpoints are left to the writer thread. A lone caller thus
//! pays no thread hand-off. Once writes meet (a write finds another in progress, or the
//! thread takes more than one at a time), every write goes to the thread for
//! [`SHARING_WINDOW`] after the last such meeting, so concurrent writes share its batches
//! (one transaction each instead of one per write).
//! A checkpoint of the WAL is not a meeting: a write that finds the thread checkpointing
//! waits for it there, and the next write runs inline again.

use crate::codec::Ctx;
use codemode::StoreError;
use rusqlite::Connection;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The most writes one transaction takes; the rest wait for the next one.
const MAX_BATCH: usize = 512;
/// How many writes the writer thread lets pass between two checkpoints of the WAL (SQLite's
/// own automatic checkpoint is off, so that none runs on a caller's thread): three or four
/// pages each, so about SQLite's default of 1,000 pages. A longer WAL costs every write: the
/// WAL index chains each hot page's frames, and appending walks the chain (at 1,000 writes
/// that walk was about a tenth of a trivial run's instructions).
pub(crate) const CHECKPOINT_EVERY: usize = 250;
/// How long writes keep going to the writer thread after two of them last met.
pub(crate) const SHARING_WINDOW: Duration = Duration::from_millis(50);

/// What the writer thread is sent.
enum Msg {
    /// A caller's write, for the next batch.
    Write(Box<dyn Job>),
    /// Inline writes have filled the WAL: time for a checkpoint.
    Checkpoint,
}

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
        StoreError::IllegalTransition { from, to } => StoreError::IllegalTransition {
            from: *from,
            to: *to,
        },
    }
}

/// The write connection (shared with `with_connection`) and the thread that commits.
pub(crate) struct Writer {
    jobs: Option<mpsc::Sender<Msg>>,
    conn: Arc<Mutex<Connection>>,
    thread: Option<JoinHandle<()>>,
    loc: Arc<str>,
    /// What the thread shares with the callers.
    shared: Arc<Shared>,
    /// The busy timeout to restore after a write that ran on its caller's thread; `None`
    /// when writes never do (`synchronous=FULL`: every commit waits for `fsync`).
    inline: Option<Duration>,
}

/// Counters the writer thread and the callers share.
struct Shared {
    /// Writes sent to the thread that it has not taken yet.
    queued: AtomicUsize,
    /// Writes committed since the last checkpoint.
    since_checkpoint: AtomicUsize,
    /// Set while the thread checkpoints (under the connection's lock).
    checkpointing: AtomicBool,
    /// Until when (µs after `epoch`) writes go to the thread: two writes met lately.
    sharing_until: AtomicU64,
    /// The clock's start.
    epoch: Instant,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            queued: AtomicUsize::new(0),
            since_checkpoint: AtomicUsize::new(0),
            checkpointing: AtomicBool::new(false),
            sharing_until: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }
}

impl Shared {
    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Two writes met: for a while, writes share the thread's batches.
    fn met(&self) {
        let window = u64::try_from(SHARING_WINDOW.as_micros()).unwrap_or(u64::MAX);
        self.sharing_until
            .store(self.now_us().saturating_add(window), Ordering::Relaxed);
    }

    fn sharing(&self) -> bool {
        self.now_us() < self.sharing_until.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("loc", &self.loc).finish()
    }
}

impl Writer {
    /// Starts the thread that owns `conn`. With `inline` (the connection's busy timeout), a
    /// write may run on its caller's thread when that cannot make it wait.
    pub fn start(
        conn: Connection,
        loc: Arc<str>,
        inline: Option<Duration>,
    ) -> Result<Writer, StoreError> {
        // Checkpoints are the writer thread's (see `CHECKPOINT_EVERY`).
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .ctx(&loc, "turning off automatic checkpoints")?;
        let conn = Arc::new(Mutex::new(conn));
        let shared = Arc::new(Shared::default());
        let (jobs, queue) = mpsc::channel::<Msg>();
        let thread = {
            let (conn, for_thread, shared) = (conn.clone(), loc.clone(), shared.clone());
            std::thread::Builder::new()
                .name(WRITER_THREAD.into())
                .spawn(move || serve(&queue, &conn, &for_thread, &shared))
                .map_err(|e| {
                    StoreError::Backend(format!("cannot start the writer thread for {loc}: {e}"))
                })?
        };
        Ok(Writer {
            jobs: Some(jobs),
            conn,
            thread: Some(thread),
            loc,
            shared,
            inline,
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
        let (reply, mut answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Op { f, reply });
        let job = match self.run_inline(job) {
            // Answered already (a panicking write dropped its reply).
            None => return answer.try_recv().unwrap_or_else(|_| Err(self.stopped())),
            Some(job) => job,
        };
        if !self.send(job) {
            return Err(self.stopped());
        }
        answer.await.unwrap_or_else(|_| Err(self.stopped()))
    }

    /// Queues `job` for the writer thread, counted as queued until the thread takes it;
    /// false if the thread has stopped.
    fn send(&self, job: Box<dyn Job>) -> bool {
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        let sent = matches!(
            self.jobs.as_ref().map(|jobs| jobs.send(Msg::Write(job))),
            Some(Ok(()))
        );
        if !sent {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        }
        sent
    }

    /// Runs `job` on this thread as a transaction of its own if nothing can make it wait;
    /// gives it back otherwise (for the writer thread).
    fn run_inline(&self, job: Box<dyn Job>) -> Option<Box<dyn Job>> {
        let Some(busy_timeout) = self.inline else {
            return Some(job);
        };
        if self.shared.sharing() {
            return Some(job);
        }
        if self.shared.queued.load(Ordering::SeqCst) != 0 {
            self.shared.met();
            return Some(job);
        }
        // Taken (a batch, `with_connection`, another caller's inline write, a checkpoint) or
        // poisoned: the writer thread deals with it. Only a checkpoint is no meeting.
        let Ok(conn) = self.conn.try_lock() else {
            if !self.shared.checkpointing.load(Ordering::SeqCst) {
                self.shared.met();
            }
            return Some(job);
        };
        if !conn.is_autocommit() {
            return Some(job);
        }
        // Another process holding the file's write lock would make `BEGIN` wait: don't.
        let began = conn.busy_timeout(Duration::ZERO).is_ok()
            && exec(
                &conn,
                &self.loc,
                "BEGIN IMMEDIATE",
                "starting a transaction",
            )
            .is_ok();
        if let Err(e) = conn.busy_timeout(busy_timeout) {
            tracing::warn!(store = %self.loc, error = %e, "restoring the busy timeout failed");
        }
        if !began {
            return Some(job);
        }
        let mut batch = VecDeque::from([job]);
        let ended = commit_begun(&conn, &self.loc, &mut batch);
        drop(conn);
        ended.answer();
        let written = self.shared.since_checkpoint.fetch_add(1, Ordering::SeqCst) + 1;
        if written == CHECKPOINT_EVERY {
            // Not a write: it leaves the queue empty, so writes go on inline meanwhile.
            if let Some(jobs) = &self.jobs {
                let _ = jobs.send(Msg::Checkpoint);
            }
        }
        None
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

/// The name of the writer thread.
pub(crate) const WRITER_THREAD: &str = "codemode-sqlite-writer";

/// The thread: takes whatever is waiting (at least one write) and commits it as one, and
/// checkpoints the WAL every [`CHECKPOINT_EVERY`] writes (its own and the inline ones).
fn serve(queue: &mpsc::Receiver<Msg>, conn: &Mutex<Connection>, loc: &str, shared: &Shared) {
    while let Ok(first) = queue.recv() {
        let first = match first {
            Msg::Write(job) => job,
            Msg::Checkpoint => {
                checkpoint_if_due(conn, loc, shared);
                continue;
            }
        };
        // Writes sent while the lock is taken (by `with_connection`) join this batch. The
        // first still counts as queued until the lock is held, so no write runs inline
        // ahead of it.
        let locked = lock(conn);
        let mut batch = VecDeque::from([first]);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(Msg::Write(job)) => batch.push_back(job),
                // The count below decides.
                Ok(Msg::Checkpoint) => {}
                Err(_) => break,
            }
        }
        shared.queued.fetch_sub(batch.len(), Ordering::SeqCst);
        if batch.len() > 1 {
            shared.met();
        }
        let written = batch.len();
        let ended = commit_batch(&locked, loc, batch);
        // Answered once the connection is free: an answered caller's next write may then
        // run inline instead of finding the lock still held (which counts as a meeting).
        drop(locked);
        for transaction in ended {
            transaction.answer();
        }
        shared.since_checkpoint.fetch_add(written, Ordering::SeqCst);
        checkpoint_if_due(conn, loc, shared);
    }
}

/// Checkpoints once [`CHECKPOINT_EVERY`] writes have passed since the last checkpoint.
fn checkpoint_if_due(conn: &Mutex<Connection>, loc: &str, shared: &Shared) {
    if shared.since_checkpoint.load(Ordering::SeqCst) >= CHECKPOINT_EVERY {
        shared.since_checkpoint.store(0, Ordering::SeqCst);
        checkpoint(&lock(conn), loc, shared);
    }
}

/// Copies the WAL's pages into the database without waiting for readers (`PASSIVE`), so
/// that the WAL starts over once no reader needs its old pages. Runs under the write lock:
/// a checkpoint that writes go on beside never catches up with them, and the WAL then
/// never starts over.
fn checkpoint(conn: &Connection, loc: &str, shared: &Shared) {
    shared.checkpointing.store(true, Ordering::SeqCst);
    let done = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    shared.checkpointing.store(false, Ordering::SeqCst);
    if let Err(e) = done {
        tracing::warn!(store = %loc, error = %e, "checkpointing the WAL failed");
    }
}

fn exec(conn: &Connection, loc: &str, sql: &str, doing: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .ctx(loc, doing)
}

/// Runs `batch` in one transaction (more when a write's error ended one early); gives back
/// how each ended, for answering the callers once the connection is free.
fn commit_batch(conn: &Connection, loc: &str, mut batch: VecDeque<Box<dyn Job>>) -> Vec<Ended> {
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
struct Ended {
    done: Vec<Box<dyn Done>>,
    result: Result<(), StoreError>,
}

impl Ended {
    /// Answers every caller of the transaction.
    fn answer(self) {
        for d in self.done {
            d.finish(self.result.as_ref().map(|_| ()));
        }
    }
}

/// Runs the writes of `batch` in the transaction begun on `conn` and ends it; leaves in
/// `batch` the writes after one whose error ended it early.
fn commit_begun(conn: &Connection, loc: &str, batch: &mut VecDeque<Box<dyn Job>>) -> Ended {
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use std::time::Instant;

    const BUSY: Duration = Duration::from_secs(5);

    fn open(dir: &std::path::Path) -> Connection {
        let conn = Connection::open(dir.join("w.db")).unwrap();
        conn.busy_timeout(BUSY).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        conn.execute_batch("CREATE TABLE t (v TEXT)").unwrap();
        conn
    }

    /// Inserts a row; answers the name of the thread that ran the write.
    fn insert(c: &Connection, _: &str) -> Result<String, StoreError> {
        c.execute("INSERT INTO t VALUES (?1)", ["x".repeat(1_000)])
            .ctx("test", "inserting")?;
        Ok(std::thread::current()
            .name()
            .unwrap_or_default()
            .to_string())
    }

    #[tokio::test]
    async fn a_lone_write_runs_on_its_callers_thread_unless_every_commit_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::start(open(dir.path()), "w.db".into(), Some(BUSY)).unwrap();
        let here = std::thread::current()
            .name()
            .unwrap_or_default()
            .to_string();
        assert_eq!(writer.write(insert).await.unwrap(), here);
        drop(writer);

        let full = Writer::start(open_again(dir.path()), "w.db".into(), None).unwrap();
        assert_eq!(full.write(insert).await.unwrap(), WRITER_THREAD);
    }

    fn open_again(dir: &std::path::Path) -> Connection {
        let conn = Connection::open(dir.join("w.db")).unwrap();
        conn.busy_timeout(BUSY).unwrap();
        conn
    }

    #[tokio::test]
    async fn a_write_never_waits_on_its_callers_thread_for_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::start(open(dir.path()), "w.db".into(), Some(BUSY)).unwrap();
        let other = open_again(dir.path());
        other.execute_batch("BEGIN IMMEDIATE").unwrap();

        let started = Instant::now();
        let mut write = Box::pin(writer.write(insert));
        assert!(
            (&mut write).now_or_never().is_none(),
            "the write cannot commit yet"
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the caller's thread waited {:?} for the other connection's lock",
            started.elapsed()
        );
        other.execute_batch("ROLLBACK").unwrap();
        assert_eq!(write.await.unwrap(), WRITER_THREAD);
        // The busy timeout the inline attempt lowered is back for the writer's connection.
        let kept = writer
            .lock()
            .query_row("PRAGMA busy_timeout", [], |r| r.get::<_, i64>(0));
        assert_eq!(kept.unwrap(), 5_000);
    }

    #[tokio::test]
    async fn a_panicking_or_failing_inline_write_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::start(open(dir.path()), "w.db".into(), Some(BUSY)).unwrap();
        let panicked = writer
            .write(|c: &Connection, loc: &str| -> Result<(), StoreError> {
                insert(c, loc)?;
                panic!("a bug in a write")
            })
            .await;
        assert!(
            matches!(panicked, Err(StoreError::Backend(m)) if m.contains("stopped before answering"))
        );
        let failed = writer
            .write(|c: &Connection, loc: &str| -> Result<(), StoreError> {
                insert(c, loc)?;
                Err(StoreError::Backend("refused".into()))
            })
            .await;
        assert!(matches!(failed, Err(StoreError::Backend(m)) if m == "refused"));
        writer.write(insert).await.unwrap();
        let rows = writer
            .lock()
            .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0));
        assert_eq!(rows.unwrap(), 1, "only the write that succeeded is kept");
        assert!(writer.lock().is_autocommit(), "no transaction is left open");
    }

    #[tokio::test]
    async fn the_writer_thread_checkpoints_what_inline_writes_leave_in_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::start(open(dir.path()), "w.db".into(), Some(BUSY)).unwrap();
        // About 2 pages each: 20,000 pages (80 MB) of WAL without checkpoints.
        for _ in 0..10_000 {
            writer.write(insert).await.unwrap();
        }
        let wal = std::fs::metadata(dir.path().join("w.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 24 << 20, "the WAL grew to {wal} bytes");
    }

    #[tokio::test]
    async fn a_checkpoint_takes_lone_writes_off_their_callers_thread_only_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::start(open(dir.path()), "w.db".into(), Some(BUSY)).unwrap();
        // Four checkpoints' worth, back to back. A write that finds the thread checkpointing
        // waits for it there; the next one runs inline again (no window of shared batches).
        let mut sent = 0;
        for _ in 0..CHECKPOINT_EVERY * 4 {
            if writer.write(insert).await.unwrap() == WRITER_THREAD {
                sent += 1;
            }
        }
        assert!(
            sent <= 8,
            "{sent} of the lone writes went to the writer thread"
        );
        // And the checkpoints ran: the WAL holds no more than the writes since the last one.
        let wal = std::fs::metadata(dir.path().join("w.db-wal"))
            .unwrap()
            .len();
        assert!(wal < 8 << 20, "the WAL grew to {wal} bytes");
    }

    // Holding the connection while another read or write waits is what is tested.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_that_meet_share_the_writer_threads_batches_for_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::start(open(dir.path()), "w.db".into(), Some(BUSY)).unwrap();
        let writer = Arc::new(writer);
        // A write waiting for a held connection meets the one holding it.
        let held = writer.lock();
        let waiting = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert).await }
        });
        while writer.shared.queued.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        drop(held);
        assert_eq!(waiting.await.unwrap().unwrap(), WRITER_THREAD);
        // The next lone write still goes to the thread, until the window has passed.
        assert_eq!(writer.write(insert).await.unwrap(), WRITER_THREAD);
        tokio::time::sleep(SHARING_WINDOW * 2).await;
        assert_ne!(writer.write(insert).await.unwrap(), WRITER_THREAD);
    }
}
