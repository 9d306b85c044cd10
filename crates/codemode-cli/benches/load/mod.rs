//! What the HTTP benchmarks share beside the test helpers: a CPU hog on every core, an
//! asynchronous keep-alive client for many connections at once, a server's resident memory
//! and CPU time, and reading the benchmarks' environment variables.

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One busy-looping thread per core, at normal priority, until dropped.
pub struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Hog {
    /// Starts one busy loop per core the process may use.
    pub fn start() -> Hog {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..1_000 {
                            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                        }
                    }
                })
            })
            .collect();
        Hog { stop, threads }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A number from the environment variable `name`, or `default`.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The resident memory of process `pid`, in KiB (0 if it cannot be read).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The CPU time all threads of process `pid` and of its child processes (the sandbox
/// processes) have run so far, in nanoseconds (threads and processes that have ended are not
/// counted; 0 if it cannot be read).
pub fn cpu_ns(pid: u32) -> u64 {
    let children: u64 = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| parent_of(child) == Some(pid))
        .map(threads_cpu_ns)
        .sum();
    threads_cpu_ns(pid) + children
}

/// The parent of process `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: the fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time all live threads of process `pid` have run so far, in nanoseconds.
fn threads_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// An answer: the status code, a header the caller asked for, and the body as JSON
/// (`Null` when it is not JSON).
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// The body.
    pub json: serde_json::Value,
}

/// One keep-alive HTTP/1.1 connection on tokio.
pub struct Conn {
    host: String,
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects to `base` (`http://host:port`).
    pub async fn open(base: &str) -> std::io::Result<Conn> {
        let host = base
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let stream = TcpStream::connect(&host).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            host,
            stream,
            buf: Vec::with_capacity(4096),
        })
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, body: &str) -> std::io::Result<Answer> {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
        self.stream.write_all(request.as_bytes()).await?;
        self.answer().await
    }

    /// `POST /api/run {code}`.
    pub async fn run(&mut self, code: &str) -> std::io::Result<Answer> {
        let body = serde_json::json!({ "code": code }).to_string();
        self.post("/api/run", &body).await
    }

    async fn answer(&mut self) -> std::io::Result<Answer> {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut length = 0usize;
        let mut retry_after = None;
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("retry-after") {
                    retry_after = Some(value.trim().to_string());
                }
            }
        }
        while self.buf.len() < head_end + length {
            self.fill().await?;
        }
        let json = serde_json::from_slice(&self.buf[head_end..head_end + length])
            .unwrap_or(serde_json::Value::Null);
        self.buf.drain(..head_end + length);
        Ok(Answer {
            status,
            retry_after,
            json,
        })
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
