//! The event streams of `codemode serve`: an execution's calls and console lines arrive while
//! it runs, in order, then its status; a reconnect with `Last-Event-ID` resumes without loss;
//! a client that missed too much is told to reload; a client that stops reading is closed;
//! cancel stops a loop that calls nothing.

mod common;

use common::{client, get, post, serve};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

/// One server-sent event.
#[derive(Debug, Clone)]
struct Sse {
    id: Option<u64>,
    event: String,
    data: Value,
}

impl Sse {
    /// A short form for comparing sequences.
    fn brief(&self) -> String {
        let d = &self.data;
        match self.event.as_str() {
            "call_started" => format!("start {}#{}", d["method"].as_str().unwrap(), d["seq"]),
            "call_ended" => format!(
                "end {}#{} {}",
                d["method"].as_str().unwrap(),
                d["seq"],
                d["ok"]
            ),
            "console" => format!("console {}", d["line"].as_str().unwrap()),
            "status_changed" => format!("status {}", d["status"].as_str().unwrap()),
            other => other.to_string(),
        }
    }
}

/// An open event stream read with reqwest, one event at a time.
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    /// Opens `path` (with `Last-Event-ID: after`) and waits for the server's `ready` comment.
    async fn open(http: &reqwest::Client, url: String, after: Option<u64>) -> Stream {
        let mut req = http.get(url);
        if let Some(id) = after {
            req = req.header("Last-Event-ID", id.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        let mut s = Stream {
            resp,
            buf: String::new(),
        };
        let first = s.block().await.expect("the stream ended at once");
        assert_eq!(first.trim(), ": ready");
        s
    }

    /// The next block (up to a blank line), or `None` when the stream ends.
    async fn block(&mut self) -> Option<String> {
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block = self.buf[..at].to_string();
                self.buf.drain(..at + 2);
                return Some(block);
            }
            let chunk = tokio::time::timeout(LIMIT, self.resp.chunk())
                .await
                .expect("no event in time")
                .unwrap()?;
            self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// The next event (comments skipped).
    async fn next(&mut self) -> Option<Sse> {
        loop {
            let block = self.block().await?;
            let mut e = Sse {
                id: None,
                event: String::new(),
                data: Value::Null,
            };
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    e.id = Some(v.parse().unwrap());
                } else if let Some(v) = line.strip_prefix("event: ") {
                    e.event = v.to_string();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    e.data = serde_json::from_str(v).unwrap();
                }
            }
            if !e.event.is_empty() {
                return Some(e);
            }
        }
    }

    /// Events up to and including the first status that is not `running`.
    async fn until_settled(&mut self) -> Vec<Sse> {
        let mut seen = Vec::new();
        loop {
            let e = self.next().await.expect("the stream ended early");
            let done = e.event == "status_changed" && e.data["status"] != "running";
            seen.push(e);
            if done {
                return seen;
            }
        }
    }
}

/// Three calls and a console line; the code then spins 1.5 s before its last two calls, so
/// an event seen during the spin was seen while the run was still going.
const CODE: &str = "await tasks.list_tasks({}); console.log('between'); const t = Date.now(); while (Date.now() - t < 1500) {} await tasks.list_tasks({}); await tasks.list_tasks({}); return 3";

const EXPECTED: [&str; 8] = [
    "start list_tasks#0",
    "end list_tasks#0 true",
    "console between",
    "start list_tasks#1",
    "end list_tasks#1 true",
    "start list_tasks#2",
    "end list_tasks#2 true",
    "status completed",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_running_executions_calls_and_console_lines_arrive_live_in_order_and_resume_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let http = client();
    let base = server.base.clone();
    let mut all = Stream::open(&http, format!("{base}/api/events"), None).await;
    let run = {
        let (http, base) = (http.clone(), base.clone());
        tokio::spawn(async move {
            post(&http, format!("{base}/api/run"), json!({ "code": CODE })).await
        })
    };
    let started = all.next().await.unwrap();
    assert_eq!(started.brief(), "status running", "{started:?}");
    let id = started.data["executionId"].as_str().unwrap().to_string();
    let from = started.id.unwrap();

    // Everything of this execution after its start, as it happens.
    let url = format!("{base}/api/executions/{id}/events");
    let mut one = Stream::open(&http, url.clone(), Some(from)).await;
    let mut live = Vec::new();
    while live.last().map(Sse::brief).as_deref() != Some("console between") {
        live.push(one.next().await.unwrap());
    }
    assert!(
        !run.is_finished(),
        "the console line came after the run ended"
    );
    live.extend(one.until_settled().await);
    let briefs: Vec<String> = live.iter().map(Sse::brief).collect();
    assert_eq!(briefs, EXPECTED);
    let ids: Vec<u64> = live.iter().map(|e| e.id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let call_ended = &live[1].data;
    assert!(call_ended["durationMs"].is_u64(), "{call_ended}");
    let (status, outcome) = run.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(outcome["result"], 3);

    // The all-executions stream carries the status, not the calls.
    let ended = all.next().await.unwrap();
    assert_eq!(ended.brief(), "status completed");
    assert_eq!(ended.data["executionId"], id.as_str());

    // A reconnect after the third event picks up at the fourth: nothing lost, nothing twice.
    let mut first = Stream::open(&http, url.clone(), Some(from)).await;
    let mut head = Vec::new();
    for _ in 0..3 {
        head.push(first.next().await.unwrap());
    }
    drop(first);
    let mut again = Stream::open(&http, url.clone(), head[2].id).await;
    head.extend(again.until_settled().await);
    let resumed: Vec<String> = head.iter().map(Sse::brief).collect();
    assert_eq!(resumed, EXPECTED);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_stream_requests_are_refused_and_a_client_that_missed_too_much_is_told_to_reload() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let http = client();
    let base = &server.base;
    let (status, body) = get(&http, format!("{base}/api/executions/nope/events")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");
    let r = http
        .get(format!("{base}/api/events"))
        .header("Last-Event-ID", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("Last-Event-ID"),
        "{body}"
    );

    // 2,100 calls make 4,200 events: more than the 4,096 the server keeps.
    let (status, done) = post(
        &http,
        format!("{base}/api/run"),
        json!({ "code": "for (let i = 0; i < 2100; i++) await tasks.list_tasks({}); return 1" }),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    let mut late = Stream::open(&http, format!("{base}/api/events"), Some(1)).await;
    let reset = late.next().await.unwrap();
    assert_eq!(reset.event, "reset", "{reset:?}");
    assert!(
        reset.data["error"].as_str().unwrap().contains("reload"),
        "{reset:?}"
    );
}

/// A client that opens an execution's stream and never reads is closed once the server has
/// waited `header_timeout_ms` to write to it, and the stream count goes back to zero.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_reads_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("codemode.toml"),
        "[limits]\nheader_timeout_ms = 1000\n",
    )
    .unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let http = client();
    let base = &server.base;
    // A paused run, so its stream can be opened before the events come.
    let code = "await tasks.create_task({ title: 'many' }); for (let i = 0; i < 9000; i++) await tasks.list_tasks({}); return 1";
    let (_, paused) = post(&http, format!("{base}/api/run"), json!({ "code": code })).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["executionId"].as_str().unwrap();

    // A raw connection with a small receive window, that reads nothing after its request.
    let host = base.trim_start_matches("http://");
    let addr: std::net::SocketAddr = host.parse().unwrap();
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut raw: std::net::TcpStream = socket.into();
    write!(
        raw,
        "GET /api/executions/{id}/events HTTP/1.1\r\nHost: {host}\r\n\r\n"
    )
    .unwrap();

    // 18,000 call events (about 3 MB) go to a client that takes none of them.
    let (status, done) = post(
        &http,
        format!("{base}/api/executions/{id}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");

    // The server gives up on it while it still reads nothing: its stream is no longer
    // counted (without the write limit the stream would wait for the client for ever).
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = common::metrics_text(&http, base).await;
        if metrics.contains("codemode_event_stream_clients 0") {
            break;
        }
        assert!(
            Instant::now() < until,
            "the stalled stream is still open: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // What was sent before the stall ends, then the connection does.
    raw.set_read_timeout(Some(LIMIT)).unwrap();
    let mut got = Vec::new();
    match raw.read_to_end(&mut got) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server kept the stalled connection open: {e}"),
    }
    let text = String::from_utf8_lossy(&got);
    assert!(
        !text.contains("\"status\":\"completed\""),
        "the client got every event: the stream never stalled ({} bytes)",
        got.len()
    );
}

/// `POST /api/executions/{id}/cancel` stops a run inside a loop that calls nothing.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_over_http_stops_a_loop_that_calls_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let http = client();
    let base = server.base.clone();
    let mut all = Stream::open(&http, format!("{base}/api/events"), None).await;
    let run = {
        let (http, base) = (http.clone(), base.clone());
        let code = "await tasks.create_task({ title: 'kept' }); for (;;) {}";
        tokio::spawn(async move {
            post(&http, format!("{base}/api/run"), json!({ "code": code })).await
        })
    };
    let started = all.next().await.unwrap();
    let id = started.data["executionId"].as_str().unwrap().to_string();
    // Its write needs approval: approve it, then the loop runs.
    let paused = all.next().await.unwrap();
    assert_eq!(paused.brief(), "status paused", "{paused:?}");
    let pending = all.next().await.unwrap();
    assert_eq!(pending.event, "pending_created", "{pending:?}");
    assert_eq!(
        pending.data["pending"][0]["method"], "create_task",
        "{pending:?}"
    );
    let _ = run.await.unwrap();
    let mut one = Stream::open(&http, format!("{base}/api/executions/{id}/events"), None).await;
    let approve = {
        let (http, base, id) = (http.clone(), base.clone(), id.clone());
        tokio::spawn(async move {
            post(
                &http,
                format!("{base}/api/executions/{id}/approve"),
                json!({}),
            )
            .await
        })
    };
    // The write ran: the loop has begun.
    loop {
        let e = one.next().await.unwrap();
        if e.brief() == "end create_task#0 true" {
            break;
        }
    }
    let asked = Instant::now();
    let (status, cancelled) = post(
        &http,
        format!("{base}/api/executions/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    let (status, outcome) = approve.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(outcome["status"], "error", "{outcome}");
    assert!(
        outcome["error"].as_str().unwrap().contains("cancelled by"),
        "{outcome}"
    );
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    let (_, e) = get(&http, format!("{base}/api/executions/{id}")).await;
    assert_eq!(e["status"], "cancelled");
    assert_eq!(
        e["log"].as_array().unwrap().len(),
        1,
        "the applied write stays"
    );
}
