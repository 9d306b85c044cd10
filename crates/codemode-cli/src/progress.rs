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
        Progress::start_on(what, std::io::stderr().is_terminal(), std::io::stderr)
    }

    /// Starts a spinner drawn on the writers `open` returns, if `terminal`.
    fn start_on<W: Write>(
        what: &str,
        terminal: bool,
        open: impl Fn() -> W + Send + 'static,
    ) -> Progress {
        if !terminal {
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
                    let mut err = open();
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
                let mut err = open();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A writer appending to a shared buffer.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn step(terminal: bool, lasts: Duration) -> String {
        let screen = Screen::default();
        let drawn = screen.clone();
        let progress = Progress::start_on("loading spec", terminal, move || drawn.clone());
        std::thread::sleep(lasts);
        progress.done();
        screen.text()
    }

    #[test]
    fn a_slow_step_on_a_terminal_shows_a_spinner_then_clears_its_line() {
        let text = step(true, Duration::from_millis(600));
        assert!(text.starts_with("\r| loading spec (0."), "{text:?}");
        assert!(text.contains("\r/ loading spec"), "{text:?}");
        assert!(text.ends_with("\r\x1b[K"), "{text:?}");
    }

    #[test]
    fn a_quick_step_draws_nothing() {
        assert_eq!(step(true, Duration::from_millis(20)), "");
    }

    #[test]
    fn nothing_is_drawn_when_stderr_is_not_a_terminal() {
        assert_eq!(step(false, Duration::from_millis(600)), "");
    }
}
