//! Sending a request: base URL, credentials, fixed headers, timeout, and the response as a value.

use crate::auth::Credentials;
use crate::load::describe_reqwest;
use crate::operations::is_json;
use crate::request::HttpRequest;
use base64::Engine;
use codemode::ToolError;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use std::time::Duration;
use url::Url;

/// Installs the process-wide rustls provider (ring) unless one is installed already.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A configured client for one API.
#[derive(Debug)]
pub struct Http {
    /// The client.
    pub client: reqwest::Client,
    /// The base URL, without a trailing `/`.
    pub base: Url,
    /// Credentials, host-side.
    pub credentials: Credentials,
    /// Fixed headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Per-call timeout.
    pub timeout: Duration,
    /// Bound on the body quoted in an error.
    pub max_error_body: usize,
    /// Bound on a response body.
    pub max_response_bytes: usize,
    /// Header carrying the idempotency key.
    pub idempotency_header: Option<HeaderName>,
}

impl Http {
    /// Sends `req` and maps the response; `key` is the idempotency key for this call.
    pub async fn send(&self, req: HttpRequest, key: &str) -> Result<Value, ToolError> {
        let creds = &self.credentials;
        let scrub = |m: String| ToolError::new(creds.scrub(&m));
        let label = format!("{} {}", req.method, req.path);

        let mut url = Url::parse(&format!(
            "{}{}",
            self.base.as_str().trim_end_matches('/'),
            req.path
        ))
        .map_err(|e| scrub(format!("{label}: bad URL: {e}")))?;
        if url.origin() != self.base.origin()
            || !url
                .path()
                .starts_with(self.base.path().trim_end_matches('/'))
        {
            return Err(scrub(format!("{label}: path leaves the API's base URL")));
        }
        {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in &req.query {
                if creds.owns(None, Some(k)) {
                    return Err(scrub(format!(
                        "{label}: query parameter `{k}` is set by the connector"
                    )));
                }
                pairs.append_pair(k, v);
            }
            if let Some((k, v)) = creds.query() {
                pairs.append_pair(k, v);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| scrub(format!("{label}: bad HTTP method")))?;
        let mut builder = self.client.request(method, url).timeout(self.timeout);
        for (k, v) in &self.headers {
            builder = builder.header(k, v);
        }
        for (k, v) in &req.headers {
            if creds.owns(Some(k), None) || k.eq_ignore_ascii_case("host") {
                return Err(scrub(format!(
                    "{label}: header `{k}` is set by the connector"
                )));
            }
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| scrub(format!("{label}: `{k}` is not a valid header name")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| scrub(format!("{label}: header `{k}` has an invalid value")))?;
            builder = builder.header(name, value);
        }
        if let Some(h) = &self.idempotency_header {
            builder = builder.header(h, key);
        }
        if let Some((k, v)) = creds.header() {
            let mut value = HeaderValue::from_str(v).map_err(|_| {
                scrub(format!(
                    "{label}: the credential is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            builder = builder.header(k, value);
        }
        if let Some((ct, bytes)) = req.body {
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, ct)
                .body(bytes);
        }

        let mut resp = builder.send().await.map_err(|e| {
            if e.is_timeout() {
                scrub(format!(
                    "{label}: timed out after {} ms",
                    self.timeout.as_millis()
                ))
            } else {
                scrub(format!("{label}: {}", describe_reqwest(&e)))
            }
        })?;
        let status = resp.status();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if body.len() > self.max_response_bytes {
                        return Err(scrub(format!(
                            "{label}: response is larger than {} bytes",
                            self.max_response_bytes
                        )));
                    }
                }
                Ok(None) => break,
                Err(e) if e.is_timeout() => {
                    return Err(scrub(format!(
                        "{label}: timed out after {} ms",
                        self.timeout.as_millis()
                    )))
                }
                Err(e) => return Err(scrub(format!("{label}: {}", describe_reqwest(&e)))),
            }
        }

        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let mut quoted: String = text.chars().take(self.max_error_body).collect();
            if text.chars().count() > self.max_error_body {
                quoted.push_str("… (cut)");
            }
            return Err(scrub(format!("{label}: HTTP {status}: {quoted}")));
        }
        let value = if req.method == "HEAD" {
            let mut headers = Map::new();
            for (k, v) in resp.headers() {
                headers.insert(
                    k.to_string(),
                    Value::String(v.to_str().unwrap_or("").to_string()),
                );
            }
            json!({"status": status.as_u16(), "headers": headers})
        } else {
            decode(&content_type, body)
        };
        Ok(creds.scrub_value(value))
    }
}

/// A response body as a value: JSON parsed, text as a string, anything else described.
fn decode(content_type: &str, body: Vec<u8>) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    if is_json(content_type) || content_type.is_empty() {
        if let Ok(v) = serde_json::from_slice(&body) {
            return v;
        }
    }
    match String::from_utf8(body) {
        Ok(text) => Value::String(text),
        Err(e) => {
            let bytes = e.into_bytes();
            json!({
                "contentType": content_type,
                "size": bytes.len(),
                "base64": base64::engine::general_purpose::STANDARD.encode(&bytes),
            })
        }
    }
}
