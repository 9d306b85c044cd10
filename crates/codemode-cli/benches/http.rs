//! Medians through HTTP on loopback with a keep-alive client, against `codemode serve`.
//! Run: cargo bench -p codemode-cli --bench http
//!
//! The client is a plain HTTP/1.1 connection on a blocking socket (keep-alive, no pooling,
//! no async runtime), so the figures are the server's latency plus one loopback round trip.

#[path = "../tests/common/mod.rs"]
mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// One keep-alive HTTP/1.1 connection.
struct Connection {
    host: String,
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Connection {
    fn open(base: &str) -> Connection {
        let host = base
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let stream = TcpStream::connect(&host).unwrap();
        stream.set_nodelay(true).unwrap();
        Connection {
            host,
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn post(&mut self, path: &str, body: &Value) -> Value {
        let body = body.to_string();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
        self.send(&request)
    }

    fn get(&mut self, path: &str) -> Value {
        let request = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.host);
        self.send(&request)
    }

    fn send(&mut self, request: &str) -> Value {
        self.writer.write_all(request.as_bytes()).unwrap();
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
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
        self.reader.read_exact(&mut buf).unwrap();
        serde_json::from_slice(&buf).unwrap()
    }

    fn run(&mut self, code: &str) -> Value {
        self.post("/api/run", &json!({ "code": code }))
    }
}

fn main() {
    let iterations: usize = std::env::var("CODEMODE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let mut c = Connection::open(&server.base);

    let cases: [(&str, &str); 3] = [
        ("async () => 1", "async () => 1"),
        (
            "one tasks.list_tasks({})",
            "return await tasks.list_tasks({})",
        ),
        (
            "loop of 100 list_tasks",
            "for (let i = 0; i < 100; i++) await tasks.list_tasks({}); return 1",
        ),
    ];
    println!("codemode over HTTP (keep-alive, loopback), median of {iterations}:");
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        c.get("/healthz");
        times.push(t.elapsed());
    }
    println!(
        "  {:<36} {}",
        "GET /healthz (the HTTP floor)",
        ms(median(times))
    );
    for (name, code) in cases {
        for _ in 0..10 {
            assert_eq!(c.run(code)["status"], "completed");
        }
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            let out = c.run(code);
            times.push(t.elapsed());
            assert_eq!(out["status"], "completed", "{out}");
        }
        println!("  {name:<36} {}", ms(median(times)));
    }

    let code = "return await tasks.create_task({ title: 'bench' })";
    let mut times = Vec::with_capacity(iterations);
    for i in 0..iterations + 10 {
        let t = Instant::now();
        let paused = c.run(code);
        let id = paused["executionId"].as_str().unwrap().to_string();
        let done = c.post(&format!("/api/executions/{id}/approve"), &json!({}));
        if i >= 10 {
            times.push(t.elapsed());
        }
        assert_eq!(done["status"], "completed", "{done}");
    }
    println!(
        "  {:<36} {}",
        "create_task paused, then approved",
        ms(median(times))
    );
}
