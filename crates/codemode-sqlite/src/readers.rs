//! Readers, each with a connection of its own: reads never wait for the writer's transaction
//! (WAL lets readers run beside a writer). A read runs on its caller's thread on a connection
//! kept for that when it is free (no thread hand-off), and otherwise on the next free reader
//! thread.

use codemode::StoreError;
use rusqlite::Connection;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Connection, &str) + Send>;

/// The name of the reader threads.
const READER_THREAD: &str = "codemode-sqlite-reader";

/// The reader threads and the line they take reads from.
pub(crate) struct Readers {
    jobs: Option<mpsc::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    loc: Arc<str>,
    /// The connection for reads on the caller's thread, taken by one read at a time.
    inline: Mutex<Connection>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl Readers {
    /// Keeps `inline` for reads on the callers' threads and starts one thread per
    /// connection of `conns`.
    pub fn start(
        inline: Connection,
        conns: Vec<Connection>,
        loc: Arc<str>,
    ) -> Result<Readers, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let mut readers = Readers {
            jobs: Some(jobs),
            threads: Vec::with_capacity(conns.len()),
            loc: loc.clone(),
            inline: Mutex::new(inline),
        };
        for conn in conns {
            let (queue, for_thread) = (queue.clone(), loc.clone());
            let thread = std::thread::Builder::new()
                .name(READER_THREAD.into())
                .spawn(move || serve(&queue, conn, &for_thread))
                .map_err(|e| {
                    StoreError::Backend(format!("cannot start a reader thread for {loc}: {e}"))
                })?;
            readers.threads.push(thread);
        }
        Ok(readers)
    }

    /// Runs `f` on this thread if the inline connection is free, else on the next free
    /// reader thread. It sees every write whose caller was answered before it was called.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection, &str) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        // Taken by another caller's read, or poisoned: a reader thread takes it.
        if let Ok(mut conn) = self.inline.try_lock() {
            let out =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut conn, &self.loc)));
            end_read(&conn, &self.loc);
            return out.unwrap_or_else(|_| Err(self.stopped()));
        }
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn, loc| {
            let _ = reply.send(f(conn, loc));
        });
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        if !matches!(sent, Some(Ok(()))) {
            return Err(self.stopped());
        }
        answer.await.unwrap_or_else(|_| Err(self.stopped()))
    }

    fn stopped(&self) -> StoreError {
        StoreError::Backend(format!(
            "a reader of {} stopped before answering (a bug in a read)",
            self.loc
        ))
    }
}

impl Drop for Readers {
    /// Lets the threads finish the reads already sent, then closes their connections.
    fn drop(&mut self) {
        self.jobs = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn serve(queue: &Mutex<mpsc::Receiver<Job>>, mut conn: Connection, loc: &str) {
    loop {
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        let Ok(job) = job else {
            return;
        };
        // A panicking read drops its reply (its caller gets an error); the thread goes on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut conn, loc)));
        end_read(&conn, loc);
    }
}

/// Ends a read transaction a read left open (it would pin the WAL's old pages).
fn end_read(conn: &Connection, loc: &str) {
    if !conn.is_autocommit() {
        if let Err(e) = conn.execute_batch("ROLLBACK") {
            tracing::warn!(store = %loc, error = %e, "ending a read failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(dir: &std::path::Path) -> Connection {
        let conn = Connection::open(dir.join("r.db")).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        conn
    }

    /// The thread a read ran on.
    fn thread_name(_: &mut Connection, _: &str) -> Result<String, StoreError> {
        Ok(std::thread::current()
            .name()
            .unwrap_or_default()
            .to_string())
    }

    // Holding the connection while another read or write waits is what is tested.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test]
    async fn a_read_runs_on_its_callers_thread_unless_another_holds_that_connection() {
        let dir = tempfile::tempdir().unwrap();
        let (inline, threads) = (connection(dir.path()), vec![connection(dir.path())]);
        let readers = Readers::start(inline, threads, "r.db".into()).unwrap();
        let here = std::thread::current()
            .name()
            .unwrap_or_default()
            .to_string();
        assert_eq!(readers.read(thread_name).await.unwrap(), here);

        let held = readers.inline.lock().unwrap();
        assert_eq!(readers.read(thread_name).await.unwrap(), READER_THREAD);
        drop(held);

        // A panicking read is an error for its caller; the connection is usable after it.
        let panicked = readers
            .read(|_: &mut Connection, _: &str| -> Result<(), StoreError> { panic!("a bug") })
            .await;
        assert!(matches!(panicked, Err(StoreError::Backend(m)) if m.contains("stopped")));
        assert_eq!(readers.read(thread_name).await.unwrap(), here);
    }
}
