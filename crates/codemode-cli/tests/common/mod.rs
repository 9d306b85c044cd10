//! Helpers for the end-to-end tests: the real binary as a child process.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_codemode");

/// A running `codemode serve`, killed on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub db: PathBuf,
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
    let db = dir.join("codemode.db");
    let mut cmd = Command::new(BIN);
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
    std::thread::spawn(move || for _ in lines {});
    Server { child, base, db }
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
