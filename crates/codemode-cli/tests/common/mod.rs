//! Helpers for the end-to-end tests: the real binary as a child process.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_codemode");

/// A running `codemode serve`, killed on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub db: PathBuf,
    /// Everything the server wrote to stderr after its address, as it arrives.
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    /// Sends `signal` (`INT`, `TERM`) to the server.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits up to `limit` for the server to exit; its exit code, or `None` if it still runs.
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> Option<i32> {
        let until = std::time::Instant::now() + limit;
        while std::time::Instant::now() < until {
            if let Some(status) = self.child.try_wait().expect("wait for serve") {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `codemode serve` in `dir` with extra args and env; waits for its address.
pub fn serve(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
    let db = dir.join("codemode.db");
    let store = format!("sqlite:{}", db.display());
    serve_on(dir, &store, args, env)
}

/// Starts `codemode serve` in `dir` on the store `store` (any `--store` URL).
pub fn serve_on(dir: &Path, store: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
    serve_bin_on(BIN, dir, store, args, env)
}

/// Starts `bin serve` (another build of `codemode`, for comparisons) in `dir` on `store`.
pub fn serve_bin_on(
    bin: &str,
    dir: &Path,
    store: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let db = dir.join("codemode.db");
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir)
        .arg("serve")
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn codemode serve");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    let base = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(rest) = line.strip_prefix("codemode serving on ") {
                    break rest.trim().to_string();
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            _ => panic!("serve exited before listening:\n{seen}"),
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let mut text = sink.lock().unwrap();
            text.push_str(&line);
            text.push('\n');
        }
    });
    Server {
        child,
        base,
        db,
        stderr,
    }
}

/// Runs a CLI command on the database and returns its output.
pub fn cli(dir: &Path, db: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .arg("--store")
        .arg(format!("sqlite:{}", db.display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run codemode")
}

/// An HTTP client (keep-alive); installs the TLS crypto provider reqwest is built without.
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .build()
        .unwrap()
}

/// `POST url` with a JSON body: the status and the JSON answer (null when there is none).
pub async fn post(
    c: &reqwest::Client,
    url: String,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let r = c.post(url).json(&body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

/// `GET url`: the status and the JSON answer (null when there is none).
pub async fn get(c: &reqwest::Client, url: String) -> (u16, serde_json::Value) {
    let r = c.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

/// The text `GET {base}/metrics` answers.
pub async fn metrics_text(c: &reqwest::Client, base: &str) -> String {
    c.get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of the sample line `name` (with its labels, if any) in metrics `text`.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// What an MCP client over Streamable HTTP accepts.
pub const MCP_ACCEPT: &str = "application/json, text/event-stream";

/// Opens an MCP session at `mcp` as `name` (`initialize`, then `notifications/initialized`,
/// both answered with success); its session id.
pub async fn mcp_session(c: &reqwest::Client, mcp: &str, name: &str) -> String {
    let init = c
        .post(mcp)
        .header("accept", MCP_ACCEPT)
        .json(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(init.status().as_u16(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    init.bytes().await.unwrap();
    let initialized = c
        .post(mcp)
        .header("accept", MCP_ACCEPT)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert!(initialized.status().is_success());
    session
}

/// One keep-alive HTTP/1.1 connection on a blocking socket: no pooling and no reconnecting,
/// so a test sees when the server closes it.
pub struct KeepAlive {
    host: String,
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl KeepAlive {
    /// Connects to `base` (`http://host:port`).
    pub fn open(base: &str) -> KeepAlive {
        let host = base
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let stream = TcpStream::connect(&host).unwrap();
        stream.set_nodelay(true).unwrap();
        KeepAlive {
            host,
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Makes every later answer fail instead of waiting longer than `limit` for it.
    pub fn timeout(self, limit: std::time::Duration) -> KeepAlive {
        self.writer.set_read_timeout(Some(limit)).unwrap();
        self
    }

    /// `POST path` with a JSON body; the JSON answer.
    pub fn post(&mut self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        let body = body.to_string();
        self.write(self.head("POST", path, Some(body.len())).as_bytes())
            .and_then(|()| self.write(body.as_bytes()))
            .and_then(|()| self.answer())
            .unwrap()
    }

    /// `GET path`; the JSON answer.
    pub fn get(&mut self, path: &str) -> serde_json::Value {
        self.write(self.head("GET", path, None).as_bytes())
            .and_then(|()| self.answer())
            .unwrap()
    }

    /// `DELETE path`; the JSON answer.
    pub fn delete(&mut self, path: &str) -> serde_json::Value {
        // State-changing requests are JSON only, even without a body.
        self.write(self.head("DELETE", path, Some(0)).as_bytes())
            .and_then(|()| self.answer())
            .unwrap()
    }

    /// `POST /api/run {code}`; the outcome.
    pub fn run(&mut self, code: &str) -> serde_json::Value {
        self.post("/api/run", &serde_json::json!({ "code": code }))
    }

    /// The request line and headers of a request (with a JSON body of `length` bytes).
    pub fn head(&self, method: &str, path: &str, length: Option<usize>) -> String {
        let body = length.map_or(String::new(), |n| {
            format!("Content-Type: application/json\r\nContent-Length: {n}\r\n")
        });
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{body}\r\n",
            self.host
        )
    }

    /// Writes raw bytes of a request.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)
    }

    /// Reads one response and parses its body as JSON; an error if the server closed.
    pub fn answer(&mut self) -> std::io::Result<serde_json::Value> {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        let mut buf = vec![0; length];
        self.reader.read_exact(&mut buf)?;
        Ok(serde_json::from_slice(&buf)?)
    }
}

/// The npm fixtures folder (`fixtures/`, with the MCP SDK and the real servers installed by
/// `npm ci`) when it and `node` are there; else a skip (a failure under `CI`) and `None`.
pub fn fixtures() -> Option<PathBuf> {
    codemode_testkit::npm_fixtures()?;
    let node = Command::new("node").arg("--version").output().is_ok();
    codemode_testkit::require(
        node.then(codemode_testkit::fixtures_dir),
        "node",
        "install Node.js 20 or later",
    )
}
