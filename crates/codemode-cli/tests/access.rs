//! Nobody gets what is not theirs: cross-site and DNS-rebinding checks, token roles on every
//! route (over HTTP and `/mcp`), who made a decision, elicitation only where trusted, bad token
//! configurations, rate limits, and slow clients, all against the real binary on loopback.

mod common;

use common::{serve, BIN};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// One request on its own connection: the status, the headers (lowercase) and the JSON body.
fn request(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String, Value) {
    let authority = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {authority}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap();
    let json = serde_json::from_str(body.trim()).unwrap_or(Value::String(body.to_string()));
    (status, head.to_ascii_lowercase(), json)
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

/// `method path` as `token` (none: no Authorization), with a JSON body for POST and DELETE.
fn call(base: &str, token: Option<&str>, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![JSON];
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    let body = (method != "GET").then_some(body);
    let (status, _, v) = request(base, method, path, &headers, body);
    (status, v)
}

const PAUSING: &str = "return await tasks.create_task({ title: 'needs a person' })";

fn paused(base: &str, token: Option<&str>) -> String {
    let code = json!({ "code": PAUSING }).to_string();
    let (status, out) = call(base, token, "POST", "/api/run", &code);
    assert_eq!(
        (status, out["status"].as_str()),
        (200, Some("paused")),
        "{out}"
    );
    out["executionId"].as_str().unwrap().to_string()
}

fn status_of(base: &str, token: Option<&str>, id: &str) -> Value {
    call(base, token, "GET", &format!("/api/executions/{id}"), "").1
}

#[test]
fn cross_site_requests_are_refused_and_the_own_origin_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let base = server.base.as_str();
    let port = base.rsplit(':').next().unwrap();
    let id = paused(base, None);
    let approve = format!("/api/executions/{id}/approve");

    // A foreign Host (DNS rebinding) is refused on the API, the console and /healthz.
    let evil_host = format!("evil.example:{port}");
    for path in ["/api/executions", "/", "/healthz", "/api/pending"] {
        let (status, _, v) = request(base, "GET", path, &[("Host", &evil_host)], None);
        assert_eq!(status, 403, "{path}: {v}");
        assert!(
            v["error"].as_str().unwrap().contains("allowed_hosts"),
            "{v}"
        );
    }
    // The names of this server are accepted.
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        let (status, _, _) = request(base, "GET", "/healthz", &[("Host", &host)], None);
        assert_eq!(status, 200, "{host}");
    }
    // A text/plain approve (what a cross-site form or simple fetch sends) is refused.
    let plain = [("Content-Type", "text/plain")];
    let (status, _, v) = request(base, "POST", &approve, &plain, Some("{}"));
    assert_eq!(status, 415, "{v}");
    assert!(v["error"].as_str().unwrap().contains("application/json"));
    let (status, _, _) = request(base, "POST", &approve, &[], None);
    assert_eq!(status, 415);
    // A JSON approve from a foreign origin is refused.
    let foreign = [JSON, ("Origin", "http://evil.example")];
    let (status, _, v) = request(base, "POST", &approve, &foreign, Some("{}"));
    assert_eq!(status, 403, "{v}");
    assert!(v["error"].as_str().unwrap().contains("origin"), "{v}");
    assert_eq!(status_of(base, None, &id)["status"], "paused");
    // A token in the query string is refused, with where it belongs.
    let (status, v) = call(base, None, "GET", "/api/executions?access_token=x", "");
    assert_eq!(status, 400, "{v}");
    assert!(v["error"]
        .as_str()
        .unwrap()
        .contains("Authorization header"));
    // The server's own origin approves; the decision is `local`.
    let own = format!("http://127.0.0.1:{port}");
    let (status, _, v) = request(base, "POST", &approve, &[JSON, ("Origin", &own)], None);
    assert_eq!(
        (status, v["status"].as_str()),
        (200, Some("completed")),
        "{v}"
    );
    let e = status_of(base, None, &id);
    assert_eq!(e["decisions"][0]["by"], "local", "{e}");
}

const TOKENS: &str = r#"
[auth.tokens.bot]
env = "CM_T_RUN"
role = "run"

[auth.tokens.ops]
env = "CM_T_APPROVE"
role = "approve"

[auth.tokens.root]
env = "CM_T_ADMIN"
role = "admin"
"#;
const RUN: &str = "run-token-value";
const APPROVE: &str = "approve-token-value";
const ADMIN: &str = "admin-token-value";
const ENV: [(&str, &str); 3] = [
    ("CM_T_RUN", RUN),
    ("CM_T_APPROVE", APPROVE),
    ("CM_T_ADMIN", ADMIN),
];

fn config(dir: &Path, text: &str) -> String {
    let path = dir.join("codemode.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn every_route_against_every_role() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), &format!("demo = true\n{TOKENS}"));
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--config", &file],
        &ENV,
    );
    let base = server.base.as_str();
    // (method, path, body, run, approve, admin): allowed (true) or 403 (false). Decisions use
    // an id that does not exist, so an allowed one answers 404 and nothing changes.
    let table: &[(&str, &str, &str, bool, bool, bool)] = &[
        ("GET", "/api/executions", "", true, true, true),
        ("GET", "/api/executions/nope", "", true, true, true),
        ("GET", "/api/pending", "", true, true, true),
        ("GET", "/api/snippets", "", true, true, true),
        ("GET", "/api/connectors", "", true, true, true),
        ("GET", "/api/search?q=task", "", true, true, true),
        (
            "GET",
            "/api/describe?target=tasks.create_task",
            "",
            true,
            true,
            true,
        ),
        ("GET", "/api/tool", "", true, true, true),
        ("GET", "/api/types", "", true, true, true),
        ("GET", "/api/whoami", "", true, true, true),
        ("GET", "/api/workspaces", "", true, true, true),
        (
            "GET",
            "/api/workspace/default/files?dir=/",
            "",
            true,
            true,
            true,
        ),
        (
            "GET",
            "/api/workspace/default/file?path=/a.txt",
            "",
            true,
            true,
            true,
        ),
        (
            "POST",
            "/api/run",
            r#"{"code":"return 1"}"#,
            true,
            false,
            true,
        ),
        (
            "POST",
            "/api/executions/nope/approve",
            "{}",
            false,
            true,
            true,
        ),
        (
            "POST",
            "/api/executions/nope/reject",
            r#"{"seq":0}"#,
            false,
            true,
            true,
        ),
        (
            "POST",
            "/api/executions/nope/rollback",
            "{}",
            false,
            true,
            true,
        ),
        ("DELETE", "/api/executions/nope", "", false, false, true),
        ("POST", "/api/prune", r#"{"keep":1000}"#, false, false, true),
        (
            "POST",
            "/api/expire",
            r#"{"max_age_ms":86400000}"#,
            false,
            false,
            true,
        ),
        (
            "POST",
            "/api/snippets",
            r#"{"name":"s","executionId":"nope"}"#,
            false,
            false,
            true,
        ),
        ("DELETE", "/api/snippets/nope", "", false, false, true),
    ];
    for &(method, path, body, run, approve, admin) in table {
        for (token, role, allowed) in [
            (RUN, "run", run),
            (APPROVE, "approve", approve),
            (ADMIN, "admin", admin),
        ] {
            let (status, v) = call(base, Some(token), method, path, body);
            let what = format!("{method} {path} as {role}: {status} {v}");
            assert_ne!(status, 401, "{what}");
            if allowed {
                assert_ne!(status, 403, "{what}");
            } else {
                assert_eq!(status, 403, "{what}");
                let e = v["error"].as_str().unwrap();
                assert!(
                    e.contains(&format!("role {role}")) && e.contains("needs the role"),
                    "{what}"
                );
                assert!(!e.contains(token), "{what}");
            }
        }
        let (status, _) = call(base, None, method, path, body);
        assert_eq!(status, 401, "{method} {path} without a token");
    }
    let (_, me) = call(base, Some(RUN), "GET", "/api/whoami", "");
    assert_eq!(
        (me["name"].as_str(), me["role"].as_str()),
        (Some("bot"), Some("run"))
    );
    assert_eq!(me["allows"]["decide"], false);

    // A run token starts work; an approve token decides it, and its name is recorded.
    let id = paused(base, Some(RUN));
    let approve = format!("/api/executions/{id}/approve");
    assert_eq!(call(base, Some(RUN), "POST", &approve, "{}").0, 403);
    let (status, out) = call(base, Some(APPROVE), "POST", &approve, "{}");
    assert_eq!(
        (status, out["status"].as_str()),
        (200, Some("completed")),
        "{out}"
    );
    let e = status_of(base, Some(RUN), &id);
    assert_eq!(e["decisions"][0]["kind"], "approve", "{e}");
    assert_eq!(e["decisions"][0]["by"], "ops", "{e}");

    // Through /mcp, a run token calls the code tool; without a token, 401.
    let mcp = mcp_call(base, Some(RUN), "return 6 * 7");
    assert_eq!(mcp["result"]["structuredContent"]["result"], 42, "{mcp}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    assert_eq!(call(base, None, "POST", "/mcp", init).0, 401);
}

/// Initialises an MCP session over Streamable HTTP and calls the code tool once; the answer.
fn mcp_call(base: &str, token: Option<&str>, code: &str) -> Value {
    let auth = token.map(|t| format!("Bearer {t}")).unwrap_or_default();
    let accept = ("Accept", "application/json, text/event-stream");
    let send = |session: Option<&str>, body: Value| {
        let mut h = vec![JSON, accept, ("Authorization", auth.as_str())];
        if let Some(s) = session {
            h.push(("Mcp-Session-Id", s));
        }
        let (status, head, v) = request(base, "POST", "/mcp", &h, Some(&body.to_string()));
        assert!(status < 300, "{status} {v}");
        let session = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id:"))
            .map(|s| s.trim().to_string());
        // An event stream: the JSON-RPC answer is the `data:` line that has an id.
        let text = v.as_str().map(str::to_string).unwrap_or(v.to_string());
        let answer = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or(Value::Null);
        (session, answer)
    };
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (session, _) = send(None, init);
    let session = session.expect("an MCP session id");
    send(
        Some(&session),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"codemode","arguments":{"code": code}}});
    send(Some(&session), call).1
}

/// `codemode serve` with `config_text` and `env`: it must fail to start; its stderr.
fn refused_start(config_text: &str, env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), config_text);
    let store = format!("sqlite:{}", dir.path().join("c.db").display());
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            &store,
            "--config",
            &file,
        ])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(!out.status.success(), "serve started");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn bad_token_configurations_fail_at_start_without_showing_values() {
    let same = [
        ("CM_T_RUN", "same-value"),
        ("CM_T_APPROVE", "same-value"),
        ("CM_T_ADMIN", "x"),
    ];
    let e = refused_start(TOKENS, &same);
    assert!(
        e.contains("bot") && e.contains("ops") && e.contains("same value"),
        "{e}"
    );
    assert!(!e.contains("same-value"), "{e}");
    let e = refused_start(TOKENS, &ENV[..2]);
    assert!(
        e.contains("CM_T_ADMIN") && e.contains("auth.tokens.root.env"),
        "{e}"
    );
    let bad_role = "[auth.tokens.x]\nenv = \"CM_T_RUN\"\nrole = \"root\"\n";
    let e = refused_start(bad_role, &ENV);
    assert!(
        e.contains("`run`") && e.contains("`approve`") && e.contains("`admin`"),
        "{e}"
    );
}

#[test]
fn repeated_wrong_tokens_are_rate_limited_and_the_right_token_is_still_admitted() {
    let dir = tempfile::tempdir().unwrap();
    let file = config(dir.path(), TOKENS);
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--config", &file],
        &ENV,
    );
    let base = server.base.as_str();
    for _ in 0..10 {
        assert_eq!(call(base, Some("guess"), "GET", "/api/pending", "").0, 401);
    }
    // The next wrong guess from this address is refused for a while...
    let (status, head, v) = request(
        base,
        "GET",
        "/api/pending",
        &[("Authorization", "Bearer guess-again")],
        None,
    );
    assert_eq!(status, 429, "{v}");
    assert!(head.contains("retry-after:"), "{head}");
    assert!(v["error"].as_str().unwrap().contains("wrong token"), "{v}");
    // ...but the right token, from the same address, is checked and admitted.
    for _ in 0..3 {
        assert_eq!(call(base, Some(RUN), "GET", "/api/pending", "").0, 200);
        assert_eq!(call(base, Some("guess"), "GET", "/api/pending", "").0, 429);
    }
    // A request without a token is told what is missing, not to wait.
    assert_eq!(call(base, None, "GET", "/api/pending", "").0, 401);
    assert!(!server.stderr.lock().unwrap().contains("guess"));
}

#[test]
fn idle_half_sent_and_surplus_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[limits]\nheader_timeout_ms = 400\nmax_connections = 2\nreserved_connections = 0\n";
    let file = config(dir.path(), text);
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--config", &file],
        &[],
    );
    let addr = server.base.trim_start_matches("http://").to_string();
    let open = || {
        let s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    // Closed by the server: reading ends (EOF or reset) well before the 10 s read timeout.
    let closed_within = |mut s: TcpStream| {
        let start = Instant::now();
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "not closed after {took:?}");
        String::from_utf8_lossy(&buf).to_string()
    };
    let idle = open();
    let mut half = open();
    half.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .unwrap();
    // Both slots are taken (neither is idle long enough to be closed for room): a third
    // connection gets one answer, 503 for anything but `/healthz`, and is closed.
    let mut third = open();
    third
        .write_all(format!("GET /api/pending HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let third = closed_within(third);
    assert!(
        third.starts_with("HTTP/1.1 503")
            && third.contains("max_connections")
            && third.to_ascii_lowercase().contains("retry-after: 1"),
        "{third}"
    );
    let mut health = open();
    health
        .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let health = closed_within(health);
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert_eq!(closed_within(idle), "");
    assert!(!closed_within(half).contains("200 OK"));
    // A kept-alive connection left idle after an answer is closed too.
    let mut kept = open();
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        kept.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
            .unwrap();
        let mut buf = [0u8; 4096];
        let n = kept.read(&mut buf).unwrap_or(0);
        let text = String::from_utf8_lossy(&buf[..n]).to_string();
        // The slots of the closed connections are freed as their tasks end.
        if text.starts_with("HTTP/1.1 200") || Instant::now() > deadline {
            break text;
        }
        kept = open();
    };
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    closed_within(kept);
}

#[test]
fn with_elicitation_off_accepting_it_approves_nothing() {
    let Some(fixtures) = common::fixtures() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = config(
        dir.path(),
        "demo = true\n[approvals]\nelicitation = false\n",
    );
    let server = serve(
        dir.path(),
        &["--listen", "127.0.0.1:0", "--config", &file],
        &[],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_client.mjs");
    let out = Command::new("node")
        .env("ELICIT", "accept")
        .arg(script)
        .arg(&fixtures)
        .arg("http")
        .arg(format!("{}/mcp", server.base))
        .arg("--")
        .arg(PAUSING)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["asked"], json!([]), "{v}");
    let result = &v["calls"][0];
    assert_eq!(result["structuredContent"]["status"], "paused", "{v}");
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("approve"));
    let id = result["structuredContent"]["executionId"].as_str().unwrap();
    assert_eq!(status_of(&server.base, None, id)["status"], "paused");
}

#[test]
fn a_request_a_local_proxy_relayed_is_served_only_with_behind_local_proxy() {
    let relayed = [("X-Forwarded-For", "203.0.113.7")];
    // Without the flag: refused, naming the flag that serves it.
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--demo"], &[]);
    let (status, _, v) = request(&server.base, "GET", "/api/executions", &relayed, None);
    assert_eq!(status, 403, "{v}");
    let message = v.to_string();
    assert!(message.contains("relayed by a proxy"), "{message}");
    assert!(
        message.contains("codemode serve --behind-local-proxy"),
        "{message}"
    );
    drop(server);
    // With it: the relayed request is served, and so is one from loopback itself.
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--demo", "--behind-local-proxy"], &[]);
    let (status, _, v) = request(&server.base, "GET", "/api/executions", &relayed, None);
    assert_eq!(status, 200, "{v}");
    let (status, _, v) = request(&server.base, "GET", "/api/executions", &[], None);
    assert_eq!(status, 200, "{v}");
}
