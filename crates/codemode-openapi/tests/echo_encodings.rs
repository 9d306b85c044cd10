//! An API that echoes the connector's secret back in every encoding (raw, percent-encoded in
//! either case, form-encoded, base64 in four variants, JSON-escaped, inside a `next` link and
//! a `Link` header, inside a longer base64 text): none of it reaches what the model sees, in
//! results or errors.

use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use codemode::{CallContext, Connector};
use codemode_openapi::{AuthConfig, OpenApiConfig, OpenApiConnector};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Characters that encode differently in each form.
const SECRET: &str = "s3+cr/et=k&ey\"q\\x~z%41";

fn percent(s: &str, lower: bool, form: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else if form && b == b' ' {
            out.push('+');
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Every form the echo server writes the secret in.
fn forms(secret: &str) -> BTreeMap<&'static str, String> {
    let b = secret.as_bytes();
    let json = serde_json::to_string(secret).unwrap();
    BTreeMap::from([
        ("raw", secret.to_string()),
        ("pctUpper", percent(secret, false, false)),
        ("pctLower", percent(secret, true, false)),
        ("form", percent(secret, false, true)),
        ("b64", STANDARD.encode(b)),
        ("b64NoPad", STANDARD_NO_PAD.encode(b)),
        ("b64Url", URL_SAFE.encode(b)),
        ("b64UrlNoPad", URL_SAFE_NO_PAD.encode(b)),
        ("jsonEscaped", json[1..json.len() - 1].replace('/', "\\/")),
        ("b64InPair", STANDARD.encode(format!("user:{secret}"))),
    ])
}

fn secret_of(headers: &HeaderMap) -> String {
    headers["authorization"]
        .to_str()
        .unwrap()
        .trim_start_matches("Bearer ")
        .to_string()
}

/// The secret in every form, as JSON fields, a `next` link and a JSON text in a string.
fn echoed(secret: &str) -> Value {
    let forms = forms(secret);
    let mut v = serde_json::to_value(&forms).unwrap();
    v["next"] = json!(format!(
        "http://api.example/mirror?cursor=2&token={}",
        forms["pctUpper"]
    ));
    v["links"] = json!({"next": {"href": format!("/mirror?t={}", forms["b64Url"])}});
    v["embedded"] = json!(format!("{{\"echo\":\"{}\"}}", forms["jsonEscaped"]));
    v
}

async fn mirror(
    headers: HeaderMap,
    Query(q): Query<BTreeMap<String, String>>,
) -> axum::response::Response {
    let secret = secret_of(&headers);
    let all = forms(&secret).into_values().collect::<Vec<_>>().join(" | ");
    let link = format!(
        "<http://api.example/mirror?token={}>; rel=\"next\"",
        percent(&secret, true, false)
    );
    let mut out = match q.get("as").map(String::as_str) {
        Some("text") => ([("content-type", "text/plain")], all).into_response(),
        Some("fail") => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "bad token", "echo": echoed(&secret)})),
        )
            .into_response(),
        _ => Json(echoed(&secret)).into_response(),
    };
    out.headers_mut().insert("link", link.parse().unwrap());
    out.headers_mut()
        .insert("x-echo", STANDARD.encode(&secret).parse().unwrap());
    out
}

fn spec(base: &str) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Mirror", "version": "1"},
        "servers": [{"url": base}],
        "paths": {"/mirror": {
            "get": {"operationId": "mirror",
                "parameters": [{"name": "as", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}}},
            "head": {"operationId": "mirrorHead", "responses": {"200": {"description": "ok"}}}
        }}
    })
}

/// Every string of `v`, keys included, in one text, and `v` as JSON text.
fn seen(v: &Value) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => out.push_str(&format!("{s}\n")),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.iter().for_each(|(k, x)| {
                out.push_str(&format!("{k}\n"));
                walk(x, out)
            }),
            _ => {}
        }
    }
    let mut out = v.to_string();
    walk(v, &mut out);
    out
}

fn assert_clean(what: &str, text: &str) {
    for (name, form) in forms(SECRET) {
        assert!(
            !text.contains(&form),
            "{what}: the {name} form {form:?} leaked into {text}"
        );
    }
}

#[tokio::test]
async fn a_secret_echoed_in_any_encoding_never_reaches_the_model() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().route("/mirror", get(mirror));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    std::env::set_var("CODEMODE_TEST_MIRROR_TOKEN", SECRET);
    let mut config = OpenApiConfig::new("mirror", "inline");
    config.auth = Some(AuthConfig::Bearer {
        token_env: "CODEMODE_TEST_MIRROR_TOKEN".into(),
    });
    let c = OpenApiConnector::from_bytes(config, spec(&base).to_string().as_bytes()).unwrap();
    let ctx = |seq| CallContext {
        execution_id: "exec-mirror".into(),
        seq,
    };

    let json = c.execute("mirror", json!({}), ctx(0)).await.unwrap();
    // The server did echo every form (so the test tests something), and each was scrubbed.
    assert_eq!(json["raw"], "[redacted]", "{json}");
    assert!(
        json["next"].as_str().unwrap().ends_with("token=[redacted]"),
        "{json}"
    );
    assert_clean("JSON result", &seen(&json));

    let text = c
        .execute("mirror", json!({"as": "text"}), ctx(1))
        .await
        .unwrap();
    assert_eq!(
        text.as_str().unwrap().matches("[redacted]").count(),
        forms(SECRET).len(),
        "{text}"
    );
    assert_clean("text result", &seen(&text));

    let err = c
        .execute("mirror", json!({"as": "fail"}), ctx(2))
        .await
        .unwrap_err();
    assert!(
        err.0.contains("400") && err.0.contains("[redacted]"),
        "{err}"
    );
    assert_clean("error", &err.0);

    let head = c.execute("mirrorHead", json!({}), ctx(3)).await.unwrap();
    let link = head["headers"]["link"].as_str().unwrap();
    assert_eq!(
        link,
        "<http://api.example/mirror?token=[redacted]>; rel=\"next\""
    );
    assert_eq!(head["headers"]["x-echo"], "[redacted]");
    assert_clean("HEAD result", &seen(&head));
}
