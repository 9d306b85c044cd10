//! Cross-site and DNS-rebinding checks in front of every route: the `Host` must be one this
//! server answers to, a state-changing request must be JSON from no other origin, and a token
//! in the query string is refused (tokens go only in the `Authorization` header).

use crate::api::ApiError;
use crate::state::SharedState;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use std::net::{IpAddr, SocketAddr};

/// Query parameters that look like a credential.
const TOKEN_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "bearer",
    "auth",
    "authorization",
    "api_key",
    "apikey",
];

/// Why `req` is refused, if it is (see the module's description).
pub fn refusal(state: &SharedState, req: &Request) -> Option<ApiError> {
    if let Some(q) = req.uri().query() {
        let named = q.split('&').find_map(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            TOKEN_PARAMS
                .iter()
                .find(|p| p.eq_ignore_ascii_case(key))
                .copied()
        });
        if let Some(key) = named {
            return Some(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("the query parameter {key:?} looks like a token: tokens go only in the Authorization header (Authorization: Bearer ...), never in a URL"),
            ));
        }
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let Some(host) = host else {
        return Some(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the request has no Host header",
        ));
    };
    let o = &state.options;
    if !host_allowed(&host, o.listen, &o.allowed_hosts) {
        return Some(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("the Host {host:?} is not one this server answers to (its listen address, localhost, 127.0.0.1 or [::1] with its port); add it to auth.allowed_hosts if it is this server's name"),
        ));
    }
    let m = req.method();
    if !(m == Method::POST || m == Method::PUT || m == Method::PATCH || m == Method::DELETE) {
        return None;
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let own = origin.to_str().ok().is_some_and(|o| {
            let authority = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"));
            authority.is_some_and(|a| a.eq_ignore_ascii_case(&host))
        });
        if !own {
            return Some(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "{m} {} from the origin {:?} is refused: state-changing requests are accepted only from this server's own origin",
                    req.uri().path(),
                    String::from_utf8_lossy(origin.as_bytes())
                ),
            ));
        }
    }
    // `DELETE /mcp` ends an MCP session and carries no body: MCP clients send it bare.
    let path = req.uri().path();
    let needs_json = path.starts_with("/api/") || (path == "/mcp" && m == Method::POST);
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if needs_json && !json {
        return Some(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "{m} {path} needs the header Content-Type: application/json (state-changing requests are JSON only)"
            ),
        ));
    }
    None
}

/// Whether `host` (a `Host` header: `name`, `name:port`, `[v6]:port`) names this server.
pub fn host_allowed(host: &str, listen: Option<SocketAddr>, allowed: &[String]) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let (name, port) = split_host(&host);
    let listed = allowed.iter().any(|a| {
        let a = a.trim().to_ascii_lowercase();
        let (an, ap) = split_host(&a);
        an == name && (ap.is_none() || ap == port)
    });
    if listed {
        return true;
    }
    let local = matches!(name, "localhost" | "127.0.0.1" | "[::1]");
    let Some(listen) = listen else {
        return local;
    };
    if port.unwrap_or(80) != listen.port() {
        return false;
    }
    let ip = name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    // A wildcard listener answers on every address of the machine: any IP literal (which a
    // DNS rebinding cannot produce), but a name only when it is listed.
    local || ip == Some(listen.ip()) || (listen.ip().is_unspecified() && ip.is_some())
}

fn split_host(h: &str) -> (&str, Option<u16>) {
    let cut = match h.rfind(':') {
        Some(i) if h[i..].find(']').is_none() && (h.starts_with('[') || !h[..i].contains(':')) => {
            Some(i)
        }
        _ => None,
    };
    match cut {
        Some(i) => match h[i + 1..].parse() {
            Ok(p) => (&h[..i], Some(p)),
            Err(_) => (h, None),
        },
        None => (h, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_checked_against_the_listener_and_the_list() {
        let lo: SocketAddr = "127.0.0.1:7357".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7357".parse().unwrap();
        let list = vec!["codemode.internal".to_string(), "box:9000".to_string()];
        assert!(host_allowed("127.0.0.1:7357", Some(lo), &[]));
        assert!(host_allowed("LOCALHOST:7357", Some(lo), &[]));
        assert!(host_allowed("[::1]:7357", Some(lo), &[]));
        assert!(!host_allowed("localhost:7358", Some(lo), &[]));
        assert!(!host_allowed("evil.example:7357", Some(lo), &[]));
        assert!(!host_allowed("evil.example", Some(lo), &[]));
        assert!(host_allowed("codemode.internal:7357", Some(lo), &list));
        assert!(host_allowed("box:9000", Some(lo), &list));
        assert!(!host_allowed("box:9001", Some(lo), &list));
        assert!(host_allowed("192.168.1.5:7357", Some(any), &[]));
        assert!(!host_allowed("192.168.1.5:7357", Some(lo), &[]));
        assert!(!host_allowed("rebound.example:7357", Some(any), &[]));
        assert!(host_allowed("localhost:1234", None, &[]));
    }
}
