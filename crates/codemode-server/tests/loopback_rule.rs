//! A host can trust the library alone: a router with no bearer token serves only clients on
//! loopback (by the peer address its listener records), refuses everyone else, and any
//! request whose peer it cannot know, with a body that says why and how to fix it; tokens or
//! the explicit opt-in (`ServerOptions::host_authenticated`) serve other clients.
//! In process (`tower::ServiceExt::oneshot`), and on real loopback sockets.

mod common;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use codemode_server::auth::{Principal, Role, Tokens};
use codemode_server::{router, routes, Access, ServerOptions, ServerState};
use common::{error_of, runtime, Call};
use serde_json::{json, Value};
use std::net::SocketAddr;

/// A client off loopback (TEST-NET-3).
const FAR: &str = "203.0.113.7:41000";

/// The first request of an MCP session.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
}

/// Requests to the routes behind the rule: reads, a run, MCP, the console, the metrics.
fn guarded_calls() -> Vec<Call<'static>> {
    vec![
        Call::new("GET", "/api/executions"),
        Call::new("POST", "/api/run").json(json!({"code": "return await notes.list({})"})),
        Call::new("POST", "/mcp")
            .header("accept", "application/json, text/event-stream")
            .json(initialize()),
        Call::new("GET", "/api/whoami"),
        Call::new("GET", "/metrics"),
        Call::new("GET", "/"),
    ]
}

#[tokio::test]
async fn without_tokens_a_client_off_loopback_is_refused_and_told_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(runtime(dir.path()), ServerOptions::default());
    for call in guarded_calls() {
        let what = format!("{} {}", call.method, call.path);
        let a = call.from(Some(FAR)).send(&app).await;
        assert_eq!(a.status, 403, "{what}: {:?}", a.body);
        let e = error_of(&a);
        assert!(
            e.contains("203.0.113.7") && e.contains("not loopback"),
            "{what}: {e}"
        );
        assert!(
            e.contains("bearer tokens") && e.contains("ServerOptions::host_authenticated()"),
            "{what}: {e}"
        );
    }
    // An IPv4 client on a dual-stack listener (mapped into IPv6) is no exception.
    let mapped = Call::new("GET", "/api/executions").from(Some("[::ffff:203.0.113.7]:41000"));
    assert_eq!(mapped.send(&app).await.status, 403);
    // Nothing ran: a loopback client finds no execution.
    let list = Call::new("GET", "/api/executions").send(&app).await;
    assert_eq!((list.status.as_u16(), list.body), (200, json!([])));
    // `/healthz` stays open to everyone.
    let health = Call::new("GET", "/healthz")
        .from(Some(FAR))
        .send(&app)
        .await;
    assert_eq!(health.status, 200);
    assert_eq!(health.body["connectors"], json!(["notes"]));
}

#[tokio::test]
async fn without_a_peer_address_every_request_but_healthz_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(runtime(dir.path()), ServerOptions::default());
    for call in guarded_calls() {
        let what = format!("{} {}", call.method, call.path);
        let a = call.from(None).send(&app).await;
        assert_eq!(a.status, 403, "{what}: {:?}", a.body);
        let e = error_of(&a);
        assert!(
            e.contains("cannot tell where this request comes from")
                && e.contains("into_make_service_with_connect_info::<SocketAddr>()"),
            "{what}: {e}"
        );
    }
    let health = Call::new("GET", "/healthz").from(None).send(&app).await;
    assert_eq!(health.status, 200);
}

#[tokio::test]
async fn loopback_clients_are_served_unless_a_proxy_relayed_them() {
    let dir = tempfile::tempdir().unwrap();
    let app = router(runtime(dir.path()), ServerOptions::default());
    for peer in ["127.0.0.1:50000", "[::1]:50000", "[::ffff:127.0.0.1]:50000"] {
        let a = Call::new("GET", "/api/whoami")
            .from(Some(peer))
            .send(&app)
            .await;
        assert_eq!(a.status, 200, "{peer}: {:?}", a.body);
        assert_eq!(a.body["name"], "local");
    }
    let run = Call::new("POST", "/api/run")
        .json(json!({"code": "return await notes.list({})"}))
        .send(&app)
        .await;
    assert_eq!(run.status, 200, "{:?}", run.body);
    assert_eq!(run.body["result"], json!(["buy milk", "call home"]));
    // A proxy on this machine relays the world from loopback: its requests are refused.
    for header in ["x-forwarded-for", "forwarded", "x-real-ip"] {
        let a = Call::new("GET", "/api/executions")
            .header(header, "for=198.51.100.4")
            .send(&app)
            .await;
        assert_eq!(a.status, 403, "{header}");
        let e = error_of(&a);
        assert!(
            e.contains("relayed by a proxy") && e.contains(header),
            "{e}"
        );
    }
}

#[tokio::test]
async fn with_tokens_any_client_with_a_right_token_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        tokens: Tokens::single("s3cret-token"),
        ..ServerOptions::default()
    };
    let app = router(runtime(dir.path()), options);
    for peer in [Some(FAR), Some("127.0.0.1:50000"), None] {
        let right = Call::new("POST", "/api/run")
            .from(peer)
            .header("authorization", "Bearer s3cret-token")
            .json(json!({"code": "return 1 + 1"}))
            .send(&app)
            .await;
        assert_eq!(right.status, 200, "{peer:?}: {:?}", right.body);
        assert_eq!(right.body["result"], 2);
        let wrong = Call::new("GET", "/api/executions")
            .from(peer)
            .header("authorization", "Bearer guess")
            .send(&app)
            .await;
        assert_eq!(wrong.status, 401, "{peer:?}");
        let none = Call::new("GET", "/api/executions")
            .from(peer)
            .send(&app)
            .await;
        assert_eq!(none.status, 401, "{peer:?}");
    }
}

#[tokio::test]
async fn the_opt_in_serves_every_client_the_host_lets_through() {
    let dir = tempfile::tempdir().unwrap();
    let options = ServerOptions::default().host_authenticated();
    assert_eq!(options.access, Access::HostAuthenticated);
    let app = router(runtime(dir.path()), options);
    for peer in [Some(FAR), None] {
        let a = Call::new("POST", "/api/run")
            .from(peer)
            .json(json!({"code": "return 'hi'"}))
            .send(&app)
            .await;
        assert_eq!(a.status, 200, "{peer:?}: {:?}", a.body);
        assert_eq!(a.body["result"], "hi");
    }
    assert_eq!(ServerOptions::default().access, Access::LoopbackOnly);
}

/// Who is served without tokens, by access policy, peer and relay header: `Ok(())` served,
/// `Err(words)` refused with 403 and a reason holding every one of `words`.
/// A header a proxy adds, with its value, if the request carries one.
type Header = Option<(&'static str, &'static str)>;

#[tokio::test]
async fn access_peer_and_relay_headers_decide_who_is_served() {
    type Expect = Result<(), &'static [&'static str]>;
    const SERVED: Expect = Ok(());
    const RELAYED: Expect = Err(&["relayed by a proxy", "behind_local_proxy()"]);
    const OFF_LOOPBACK: Expect = Err(&["203.0.113.7", "not loopback", "host_authenticated()"]);
    const NO_PEER: Expect = Err(&["cannot tell where this request comes from"]);
    const LOCAL: Option<&str> = Some("127.0.0.1:50000");
    let xff = Some(("x-forwarded-for", "198.51.100.4"));
    let fwd = Some(("forwarded", "for=198.51.100.4"));
    let real = Some(("x-real-ip", "198.51.100.4"));
    #[rustfmt::skip]
    let table: Vec<(Access, Option<&str>, Header, Expect)> = vec![
        (Access::LoopbackOnly,      LOCAL,            None, SERVED),
        (Access::LoopbackOnly,      Some("[::1]:9"),  None, SERVED),
        (Access::LoopbackOnly,      LOCAL,            xff,  RELAYED),
        (Access::LoopbackOnly,      LOCAL,            fwd,  RELAYED),
        (Access::LoopbackOnly,      LOCAL,            real, RELAYED),
        (Access::LoopbackOnly,      Some(FAR),        None, OFF_LOOPBACK),
        (Access::LoopbackOnly,      None,             None, NO_PEER),
        (Access::BehindLocalProxy,  LOCAL,            None, SERVED),
        (Access::BehindLocalProxy,  LOCAL,            xff,  SERVED),
        (Access::BehindLocalProxy,  Some("[::1]:9"),  fwd,  SERVED),
        (Access::BehindLocalProxy,  LOCAL,            real, SERVED),
        (Access::BehindLocalProxy,  Some(FAR),        None, OFF_LOOPBACK),
        (Access::BehindLocalProxy,  Some(FAR),        xff,  OFF_LOOPBACK),
        (Access::BehindLocalProxy,  None,             xff,  NO_PEER),
        (Access::HostAuthenticated, Some(FAR),        xff,  SERVED),
        (Access::HostAuthenticated, None,             None, SERVED),
    ];
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    for (access, peer, header, expect) in table {
        let options = ServerOptions {
            access,
            ..ServerOptions::default()
        };
        let app = router(rt.clone(), options);
        let mut call = Call::new("GET", "/api/whoami").from(peer);
        if let Some((name, value)) = header {
            call = call.header(name, value);
        }
        let a = call.send(&app).await;
        let case = format!("{access:?} from {peer:?} with {header:?}");
        match expect {
            Ok(()) => {
                assert_eq!(a.status, 200, "{case}: {:?}", a.body);
                assert_eq!(a.body["name"], "local", "{case}");
            }
            Err(words) => {
                assert_eq!(a.status, 403, "{case}: {:?}", a.body);
                let e = error_of(&a);
                for w in words {
                    assert!(e.contains(w), "{case}: {w:?} not in {e}");
                }
            }
        }
    }
    assert_eq!(
        ServerOptions::default().behind_local_proxy().access,
        Access::BehindLocalProxy
    );
}

/// Every public way to get a router applies the rule: `routes` over state the host built
/// refuses a client off loopback on every guarded route, as `router` does.
#[tokio::test]
async fn routes_over_the_hosts_own_state_keep_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let app = routes(ServerState::new(
        runtime(dir.path()),
        ServerOptions::default(),
    ));
    for call in guarded_calls() {
        let what = format!("{} {}", call.method, call.path);
        let a = call.from(Some(FAR)).send(&app).await;
        assert_eq!(a.status, 403, "{what}: {:?}", a.body);
        assert!(error_of(&a).contains("not loopback"), "{what}");
    }
    let served = Call::new("GET", "/api/whoami").send(&app).await;
    assert_eq!(served.status, 200, "{:?}", served.body);
}

/// The host's own auth: a request with `X-User: alice` is alice with the role `run`; any
/// other is refused before it reaches the router.
async fn host_auth(mut req: Request, next: Next) -> Response {
    use axum::response::IntoResponse;
    match req.headers().get("x-user").and_then(|v| v.to_str().ok()) {
        Some("alice") => {
            req.extensions_mut()
                .insert(Principal::new("alice", Role::Run));
            next.run(req).await
        }
        _ => (axum::http::StatusCode::UNAUTHORIZED, "who are you?").into_response(),
    }
}

#[tokio::test]
async fn a_host_that_authenticates_decides_who_calls_and_the_roles_still_hold() {
    let dir = tempfile::tempdir().unwrap();
    let options = ServerOptions::default().host_authenticated();
    let app = router(runtime(dir.path()), options).layer(middleware::from_fn(host_auth));
    let stranger = Call::new("GET", "/api/executions")
        .from(Some(FAR))
        .send(&app)
        .await;
    assert_eq!(stranger.status, 401);
    let me = Call::new("GET", "/api/whoami")
        .from(Some(FAR))
        .header("x-user", "alice")
        .send(&app)
        .await;
    assert_eq!(me.status, 200);
    assert_eq!(
        (&me.body["name"], &me.body["role"]),
        (&json!("alice"), &json!("run"))
    );
    // The role `run` may not prune: that needs `admin`.
    let prune = Call::new("POST", "/api/prune")
        .from(Some(FAR))
        .header("x-user", "alice")
        .json(json!({}))
        .send(&app)
        .await;
    assert_eq!(prune.status, 403);
    assert!(error_of(&prune).contains("alice"), "{:?}", prune.body);
}

/// Serves `app` on a free loopback port with axum's own server; the base URL.
async fn serve(app: axum::Router, connect_info: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    if connect_info {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, service).await });
    } else {
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    base
}

#[tokio::test]
async fn on_real_sockets_the_peer_address_decides() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let http = reqwest::Client::new();
    // Served with the peer's address: the loopback client is served.
    let base = serve(router(rt.clone(), ServerOptions::default()), true).await;
    let ok = http
        .get(format!("{base}/api/executions"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    // Served without it: refused, with the fix in the body; `/healthz` still answers.
    let base = serve(router(rt, ServerOptions::default()), false).await;
    let refused = http
        .get(format!("{base}/api/executions"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    let body: Value = refused.json().await.unwrap();
    let e = body["error"].as_str().unwrap();
    assert!(e.contains("into_make_service_with_connect_info"), "{e}");
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
}
