//! Reader threads, each with a connection of its own: reads never wait for the writer's
//! transaction (WAL lets readers run beside a writer) and never run on the caller's thread.

use codemode::StoreError;
use rusqlite::Connection;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Connection, &str) + Send>;

/// The reader threads and the line they take reads from.
pub(crate) struct Readers {
    jobs: Option<mpsc::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    loc: Arc<str>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl Readers {
    /// Starts one thread per connection.
    pub fn start(conns: Vec<Connection>, loc: Arc<str>) -> Result<Readers, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let mut readers = Readers {
            jobs: Some(jobs),
            threads: Vec::with_capacity(conns.len()),
            loc: loc.clone(),
        };
        for conn in conns {
            let (queue, for_thread) = (queue.clone(), loc.clone());
            let thread = std::thread::Builder::new()
                .name("codemode-sqlite-reader".into())
                .spawn(move || serve(&queue, conn, &for_thread))
                .map_err(|e| {
                    StoreError::Backend(format!("cannot start a reader thread for {loc}: {e}"))
                })?;
            readers.threads.push(thread);
        }
        Ok(readers)
    }

    /// Runs `f` on the next free reader. It sees every write whose caller was answered
    /// before it was sent.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection, &str) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
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
        if !conn.is_autocommit() {
            if let Err(e) = conn.execute_batch("ROLLBACK") {
                tracing::warn!(store = %loc, error = %e, "ending a read failed");
            }
        }
    }
}
