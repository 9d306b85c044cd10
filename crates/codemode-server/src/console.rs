//! The web console at `/`: static HTML, CSS and JavaScript embedded in the binary.
//!
//! The files carry no data and need no token: the page asks for the token when the API answers
//! 401. Every response has a strict Content-Security-Policy: scripts, styles and requests only
//! from this origin, no inline code, no frames.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The console's Content-Security-Policy.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Every embedded file: URL path, content type, bytes.
const FILES: &[(&str, &str, &str)] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("../console/index.html"),
    ),
    (
        "/console/style.css",
        "text/css; charset=utf-8",
        include_str!("../console/style.css"),
    ),
    (
        "/console/app.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/app.js"),
    ),
    (
        "/console/api.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/api.js"),
    ),
    (
        "/console/dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/dom.js"),
    ),
    (
        "/console/views.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/views.js"),
    ),
    (
        "/console/files.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/files.js"),
    ),
    (
        "/console/favicon.svg",
        "image/svg+xml",
        include_str!("../console/favicon.svg"),
    ),
];

fn respond(content_type: &'static str, body: &'static str) -> Response {
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// The console's routes, to merge beside the API (outside its token check); reached only
/// through [`crate::routes`], behind the loopback rule.
pub(crate) fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    FILES
        .iter()
        .fold(Router::new(), |r, &(path, content_type, body)| {
            r.route(
                path,
                get(move || async move { respond(content_type, body) }),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_served_with_its_type_and_the_policy() {
        let resp = respond("text/css; charset=utf-8", "x");
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            "text/css; charset=utf-8"
        );
        assert!(resp.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .starts_with("default-src 'self'"));
        for (path, _, body) in FILES {
            assert!(!body.is_empty(), "{path} is empty");
            // Nothing from the network.
            assert!(
                !body.contains("http://") && !body.contains("https://") || path.ends_with(".svg"),
                "{path} names a remote URL"
            );
        }
        let index = FILES[0].2;
        for (path, _, _) in &FILES[1..] {
            assert!(
                index.contains(path) || path.ends_with(".js"),
                "{path} not linked from index.html"
            );
        }
    }
}
