//! Sending a request: base URL, credentials, fixed headers, timeout, and the response as a value.

use crate::auth::Credentials;
use crate::load::describe_reqwest;
use crate::operations::is_json;
use crate::request::HttpRequest;
use crate::sender::{OutgoingRequest, Sender};
use base64::Engine;
use codemode::ToolError;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use std::time::Duration;
use url::Url;

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
    /// The host's sender, used instead of `client` when given.
    pub sender: Option<Sender>,
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
        if url.origin() != self.base.origin() || !below(&self.base, &url) {
            return Err(scrub(format!(
                "{label}: the path leaves the API's base URL {}; give a path below it",
                self.base.path()
            )));
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
        let mut headers: Vec<(HeaderName, HeaderValue)> = self.headers.clone();
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
            headers.push((name, value));
        }
        if let Some(h) = &self.idempotency_header {
            let value = HeaderValue::from_str(key)
                .map_err(|_| scrub(format!("{label}: bad idempotency key")))?;
            headers.push((h.clone(), value));
        }
        if let Some((k, v)) = creds.header() {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| scrub(format!("{label}: `{k}` is not a valid header name")))?;
            let mut value = HeaderValue::from_str(v).map_err(|_| {
                scrub(format!(
                    "{label}: the credential is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            headers.push((name, value));
        }
        let (status, resp_headers, body) = match &self.sender {
            Some(sender) => self
                .send_with(sender, method, url, headers, req.body)
                .await
                .map_err(|m| scrub(format!("{label}: {m}")))?,
            None => self
                .send_builtin(method, url, headers, req.body)
                .await
                .map_err(|m| scrub(format!("{label}: {m}")))?,
        };
        let content_type = resp_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if !status.is_success() {
            // Scrubbed before it is cut, so no secret is left cut in two.
            let text = creds.scrub(&String::from_utf8_lossy(&body));
            let mut quoted: String = text.chars().take(self.max_error_body).collect();
            if text.chars().count() > self.max_error_body {
                quoted.push_str("… (cut)");
            }
            return Err(scrub(format!("{label}: HTTP {status}: {quoted}")));
        }
        let value = if req.method == "HEAD" {
            let mut headers = Map::new();
            for (k, v) in resp_headers {
                headers.insert(k.to_ascii_lowercase(), Value::String(v));
            }
            json!({"status": status.as_u16(), "headers": headers})
        } else {
            decode(&content_type, body)
        };
        Ok(creds.scrub_value(value))
    }

    /// Sends with the built-in client; the body is read up to `max_response_bytes`.
    async fn send_builtin(
        &self,
        method: reqwest::Method,
        url: Url,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Option<(String, Vec<u8>)>,
    ) -> Result<Response, String> {
        let mut builder = self.client.request(method, url).timeout(self.timeout);
        for (k, v) in headers {
            builder = builder.header(k, v);
        }
        if let Some((ct, bytes)) = body {
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, ct)
                .body(bytes);
        }
        let timed_out = || format!("timed out after {} ms", self.timeout.as_millis());
        let mut resp = builder.send().await.map_err(|e| {
            if e.is_timeout() {
                timed_out()
            } else {
                describe_reqwest(&e)
            }
        })?;
        let status = resp.status();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if body.len() > self.max_response_bytes {
                        return Err(format!(
                            "response is larger than {} bytes",
                            self.max_response_bytes
                        ));
                    }
                }
                Ok(None) => break,
                Err(e) if e.is_timeout() => return Err(timed_out()),
                Err(e) => return Err(describe_reqwest(&e)),
            }
        }
        Ok((status, headers, body))
    }

    /// Sends with the host's sender, within the connector's timeout.
    async fn send_with(
        &self,
        sender: &Sender,
        method: reqwest::Method,
        url: Url,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Option<(String, Vec<u8>)>,
    ) -> Result<Response, String> {
        let mut out: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let body = body.map(|(ct, bytes)| {
            out.push(("content-type".into(), ct));
            bytes
        });
        let request = OutgoingRequest {
            method: method.as_str().to_string(),
            url: url.to_string(),
            headers: out,
            body,
            timeout: self.timeout,
        };
        let resp = tokio::time::timeout(self.timeout, sender.0.send(request))
            .await
            .map_err(|_| format!("timed out after {} ms", self.timeout.as_millis()))?
            .map_err(|e| e.0)?;
        if resp.body.len() > self.max_response_bytes {
            return Err(format!(
                "response is larger than {} bytes",
                self.max_response_bytes
            ));
        }
        let status = reqwest::StatusCode::from_u16(resp.status)
            .map_err(|_| format!("the sender returned status {}", resp.status))?;
        Ok((status, resp.headers, resp.body))
    }
}

/// Status, headers and body of a response.
type Response = (reqwest::StatusCode, Vec<(String, String)>, Vec<u8>);

/// Whether `url`'s path is `base`'s path or below it, segment by segment (so `/v1-admin` is not
/// below `/v1`).
pub fn below(base: &Url, url: &Url) -> bool {
    let segments = |u: &Url| -> Vec<String> {
        u.path()
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (base, url) = (segments(base), segments(url));
    url.len() >= base.len() && url[..base.len()] == base[..]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_compares_whole_segments() {
        let base = Url::parse("http://h/v1").unwrap();
        let at = |p: &str| Url::parse(&format!("http://h{p}")).unwrap();
        assert!(below(&base, &at("/v1")));
        assert!(below(&base, &at("/v1/")));
        assert!(below(&base, &at("/v1/items/a%2Fb")));
        assert!(!below(&base, &at("/v1-admin")));
        assert!(!below(&base, &at("/v1/../admin")));
        assert!(!below(&base, &at("/v1/%2e%2e/admin")));
        assert!(!below(&base, &at("/")));
        assert!(below(&Url::parse("http://h/").unwrap(), &at("/x")));
    }
}
