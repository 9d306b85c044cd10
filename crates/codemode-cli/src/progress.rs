//! Progress for slow start-up steps (connecting to servers, loading a big spec): a spinner on
//! stderr, only when stderr is a terminal, so pipes, logs and `--stdio` never see it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running spinner; stops (and clears its line) on [`Progress::done`] or drop.
pub struct Progress {
    stop: Option<Arc<AtomicBool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts a spinner labelled `what` if stderr is a terminal; otherwise does nothing.
    pub fn start(what: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress {
                stop: None,
                thread: None,
            };
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let what = what.to_string();
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
            let started = Instant::now();
            let mut i = 0;
            // Nothing is drawn for quick steps.
            while !flag.load(Ordering::Relaxed) {
                if started.elapsed() >= Duration::from_millis(150) {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(
                        err,
                        "\r{} {what} ({:.1} s)\x1b[K",
                        FRAMES[i % FRAMES.len()],
                        started.elapsed().as_secs_f64()
                    );
                    let _ = err.flush();
                    i += 1;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if started.elapsed() >= Duration::from_millis(150) {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[K");
                let _ = err.flush();
            }
        });
        Progress {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Stops the spinner and clears its line.
    pub fn done(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
