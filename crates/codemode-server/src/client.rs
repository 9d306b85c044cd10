//! A client of a running server's control API: the remote side of [`Control`].

use crate::audit::{AuditRange, AuditRecord};
use crate::control::{Control, ControlError, ControlResult};
use async_trait::async_trait;
use codemode::{
    Execution, ExecutionSummary, Outcome, PendingAction, RollbackReport, SaveSnippet, Snippet,
};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::time::Duration;

/// A client of one server's HTTP control API.
pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Client {
    /// A client of `base` (`http://HOST:PORT`), sending `token` as a bearer token when given.
    pub fn new(base: &str, token: Option<String>) -> ControlResult<Client> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ControlError::Setup(format!(
                "--server {base:?}: expected a URL like http://127.0.0.1:7357"
            )));
        }
        let http = codemode_tls::http_client_builder()
            .map_err(|e| {
                ControlError::Setup(format!("cannot set up TLS for the HTTP client: {e}"))
            })?
            .build()
            .map_err(|e| ControlError::Setup(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client { base, token, http })
    }

    async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> ControlResult<T> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.request(method.clone(), &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        } else if method != reqwest::Method::GET {
            // The server takes state-changing requests only as JSON (a cross-site guard).
            req = req.header(reqwest::header::CONTENT_TYPE, "application/json");
        }
        let resp = req.send().await.map_err(|e| ControlError::Unreachable {
            base: self.base.clone(),
            reason: e.to_string(),
        })?;
        let status = resp.status();
        let request = format!("{method} {path}");
        let text = resp.text().await.map_err(|_| ControlError::Answer {
            request: request.clone(),
            problem: "the response was cut off".into(),
        })?;
        if !status.is_success() {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
                .unwrap_or(text);
            let hint = if status == reqwest::StatusCode::UNAUTHORIZED {
                " (pass --token-env VAR naming the variable that holds the server's token)"
            } else {
                ""
            };
            return Err(ControlError::Server {
                message,
                hint,
                status: status.as_u16(),
                base: self.base.clone(),
            });
        }
        serde_json::from_str(&text).map_err(|e| ControlError::Answer {
            request,
            problem: format!("the server's answer is not what was expected ({e})"),
        })
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> ControlResult<T> {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn post<T: DeserializeOwned>(&self, path: &str, body: Value) -> ControlResult<T> {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }
}

#[async_trait]
impl Control for Client {
    async fn run(&self, code: &str) -> ControlResult<Outcome> {
        self.post("/api/run", json!({ "code": code })).await
    }

    async fn approve(&self, id: &str) -> ControlResult<Outcome> {
        let path = format!("/api/executions/{}/approve", enc(id));
        self.post(&path, json!({})).await
    }

    async fn resume(&self, id: &str) -> ControlResult<Outcome> {
        let path = format!("/api/executions/{}/resume", enc(id));
        self.post(&path, json!({})).await
    }

    async fn reject(&self, id: &str, seq: u64) -> ControlResult<()> {
        let path = format!("/api/executions/{}/reject", enc(id));
        self.post::<Value>(&path, json!({ "seq": seq }))
            .await
            .map(drop)
    }

    async fn rollback(&self, id: &str) -> ControlResult<RollbackReport> {
        let path = format!("/api/executions/{}/rollback", enc(id));
        self.post(&path, json!({})).await
    }

    async fn pending(&self) -> ControlResult<Vec<PendingAction>> {
        self.get("/api/pending").await
    }

    async fn executions(&self, limit: usize) -> ControlResult<Vec<ExecutionSummary>> {
        self.get(&format!("/api/executions?limit={limit}")).await
    }

    async fn execution(&self, id: &str) -> ControlResult<Execution> {
        self.get(&format!("/api/executions/{}", enc(id))).await
    }

    async fn snippets(&self) -> ControlResult<Vec<Snippet>> {
        self.get("/api/snippets").await
    }

    async fn save_snippet(&self, name: &str, save: SaveSnippet) -> ControlResult<Snippet> {
        let body = json!({
            "name": name, "executionId": save.execution_id, "description": save.description,
            "inputSchema": save.input_schema, "force": save.force, "replace": save.replace,
        });
        self.post("/api/snippets", body).await
    }

    async fn delete_snippet(&self, name: &str) -> ControlResult<()> {
        let path = format!("/api/snippets/{}", enc(name));
        self.send::<Value>(reqwest::Method::DELETE, &path, None)
            .await
            .map(drop)
    }

    async fn search(&self, query: &str) -> ControlResult<Value> {
        self.get(&format!("/api/search?q={}", enc(query))).await
    }

    async fn describe(&self, target: &str) -> ControlResult<Value> {
        self.get(&format!("/api/describe?target={}", enc(target)))
            .await
    }

    async fn types(&self) -> ControlResult<String> {
        let v: Value = self.get("/api/types").await?;
        v.get("types")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ControlError::Answer {
                request: "GET /api/types".into(),
                problem: "the answer has no `types` string".into(),
            })
    }

    async fn expire(&self, max_age: Duration) -> ControlResult<Vec<String>> {
        let body = json!({ "max_age_ms": max_age.as_millis() as u64 });
        let v: Value = self.post("/api/expire", body).await?;
        serde_json::from_value(v["expired"].clone()).map_err(|e| ControlError::Answer {
            request: "POST /api/expire".into(),
            problem: format!("`expired` is not a list of ids ({e})"),
        })
    }

    async fn prune(&self, keep: usize) -> ControlResult<u64> {
        let v: Value = self.post("/api/prune", json!({ "keep": keep })).await?;
        Ok(v["deleted"].as_u64().unwrap_or(0))
    }

    async fn audit(&self, range: AuditRange) -> ControlResult<Vec<AuditRecord>> {
        let until = range.until.map_or(String::new(), |u| format!("&until={u}"));
        self.get(&format!("/api/audit?since={}{until}", range.since))
            .await
    }
}

/// What [`enc`] leaves as it is: RFC 3986's unreserved characters.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes one path segment or query value.
pub fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::enc;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(enc("a b/c"), "a%20b%2Fc");
        assert_eq!(enc("x-1_2.3~"), "x-1_2.3~");
        assert_eq!(enc("é%&=?#"), "%C3%A9%25%26%3D%3F%23");
    }
}
