//! Who may call a server that has no bearer token: by default only clients on loopback, told
//! apart by the peer address the host's listener records on each request
//! (`ConnectInfo<SocketAddr>`), unless the host says it authenticates requests itself.

use crate::reply::ApiError;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::Request;
use axum::http::{HeaderName, StatusCode};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

/// Who is served when no bearer token is configured ([`crate::ServerOptions::tokens`] empty).
/// With tokens configured, every client with a right token is served, whatever its address.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Access {
    /// Only clients on loopback (127.0.0.0/8, `::1`, and IPv4 loopback mapped into IPv6), the
    /// default. A request from any other address, one relayed by a proxy (it carries
    /// `Forwarded`, `X-Forwarded-For` or `X-Real-IP`), and one whose peer address the host's
    /// listener did not record is refused with 403. `/healthz` is always answered.
    #[default]
    LoopbackOnly,
    /// Clients on loopback, including requests a proxy on this machine relayed (they carry
    /// `Forwarded`, `X-Forwarded-For` or `X-Real-IP`): for a host that puts its own reverse
    /// proxy in front of the router. The host takes on who reaches that proxy: every client
    /// it relays is served as `local` with the role `admin`, so the proxy must itself admit
    /// only clients the host means to serve (listen on loopback only, or authenticate them).
    /// A peer off loopback and a request with no peer address are still refused.
    BehindLocalProxy,
    /// Every client that reaches the router: the host authenticates each request itself (its
    /// own middleware, or a proxy that checks who calls) before the router sees it. Without
    /// tokens every such caller has every right, as `local` with the role `admin`, unless the
    /// host's middleware puts a [`super::Principal`] in the request's extensions.
    HostAuthenticated,
}

/// Headers a proxy adds when it relays a request: behind one, the peer address is the proxy's.
const RELAYED: [HeaderName; 3] = [
    HeaderName::from_static("forwarded"),
    HeaderName::from_static("x-forwarded-for"),
    HeaderName::from_static("x-real-ip"),
];

/// How a host lifts the refusal, said at the end of every refusal.
const FIX: &str = "configure bearer tokens (ServerOptions::tokens; `codemode serve --token-env VAR` or [auth.tokens.NAME] in codemode.toml), or, if the host authenticates every request itself before the router, mount it with ServerOptions::host_authenticated()";

/// How a host serves the requests its own proxy relays, said when one is refused.
const FIX_RELAYED: &str = "if that proxy is the host's own and admits only clients it means to serve, mount the router with ServerOptions::behind_local_proxy() (`codemode serve --behind-local-proxy`)";

/// Set once the missing peer address was logged, so a misconfigured host is told once.
static TOLD_NO_PEER: AtomicBool = AtomicBool::new(false);

/// Why `req` is refused when the server has no tokens (`has_tokens` false) and `access` is
/// not [`Access::HostAuthenticated`], if it is; `/healthz` never is.
pub fn refusal(access: Access, has_tokens: bool, req: &Request) -> Option<ApiError> {
    if has_tokens || access == Access::HostAuthenticated || req.uri().path() == "/healthz" {
        return None;
    }
    let refuse = |why: String| {
        Some(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("{why}; this server has no bearer tokens, so it serves only clients on loopback. To serve other clients, {FIX}"),
        ))
    };
    let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>() else {
        if !TOLD_NO_PEER.swap(true, Ordering::Relaxed) {
            tracing::warn!("codemode-server refuses every request but /healthz: the router has no tokens and its requests carry no peer address; serve it with into_make_service_with_connect_info::<SocketAddr>() or codemode_server::listen::serve");
        }
        return refuse("the server cannot tell where this request comes from: the host serves the router without the peer's address (serve it with axum's into_make_service_with_connect_info::<SocketAddr>(), or with codemode_server::listen::serve)".into());
    };
    if !peer.ip().to_canonical().is_loopback() {
        return refuse(format!(
            "this request comes from {}, which is not loopback",
            peer.ip()
        ));
    }
    if access == Access::BehindLocalProxy {
        return None;
    }
    if let Some(name) = RELAYED.iter().find(|h| req.headers().contains_key(*h)) {
        return refuse(format!(
            "this request was relayed by a proxy on this machine (it carries the header {name}), so its loopback address does not say where the client is; {FIX_RELAYED}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn from(peer: Option<&str>, header: Option<(&str, &str)>, path: &str) -> Request {
        let mut req = Request::builder().uri(path);
        if let Some((name, value)) = header {
            req = req.header(name, value);
        }
        let mut req = req.body(Body::empty()).unwrap();
        if let Some(p) = peer {
            let addr: SocketAddr = p.parse().unwrap();
            req.extensions_mut().insert(ConnectInfo(addr));
        }
        req
    }

    fn refused(peer: Option<&str>, header: Option<(&str, &str)>) -> Option<String> {
        refusal(
            Access::LoopbackOnly,
            false,
            &from(peer, header, "/api/pending"),
        )
        .map(|e| e.1)
    }

    #[test]
    fn only_loopback_peers_are_served_without_tokens() {
        assert_eq!(refused(Some("127.0.0.1:5000"), None), None);
        assert_eq!(refused(Some("127.8.9.10:5000"), None), None);
        assert_eq!(refused(Some("[::1]:5000"), None), None);
        assert_eq!(refused(Some("[::ffff:127.0.0.1]:5000"), None), None);
        let far = refused(Some("10.1.2.3:5000"), None).unwrap();
        assert!(
            far.contains("10.1.2.3") && far.contains("host_authenticated"),
            "{far}"
        );
        assert!(refused(Some("[::ffff:10.1.2.3]:5000"), None).is_some());
        assert!(refused(Some("[2001:db8::1]:5000"), None).is_some());
        let unknown = refused(None, None).unwrap();
        assert!(
            unknown.contains("into_make_service_with_connect_info"),
            "{unknown}"
        );
        let relayed = refused(Some("127.0.0.1:5000"), Some(("X-Forwarded-For", "1.2.3.4")));
        assert!(relayed.unwrap().contains("x-forwarded-for"));
    }

    #[test]
    fn tokens_the_opt_in_and_healthz_lift_the_rule() {
        let far = from(Some("10.1.2.3:5000"), None, "/api/pending");
        assert!(refusal(Access::LoopbackOnly, true, &far).is_none());
        assert!(refusal(Access::HostAuthenticated, false, &far).is_none());
        assert!(refusal(Access::BehindLocalProxy, false, &far).is_some());
        let health = from(None, None, "/healthz");
        assert!(refusal(Access::LoopbackOnly, false, &health).is_none());
    }
}
