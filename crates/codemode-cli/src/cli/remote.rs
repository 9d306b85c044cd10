//! `--server URL`: the commands that manage executions, sent to a running `codemode serve`
//! over its HTTP control API instead of opening the database.

use anyhow::{anyhow, bail, Context, Result};
use codemode::{Execution, Outcome, PendingAction, RollbackReport};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// A client of one server's control API.
pub struct Remote {
    base: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Remote {
    /// A client of `base` (`http://HOST:PORT`); the bearer token is read from `token_env`.
    pub fn new(base: &str, token_env: Option<&str>) -> Result<Remote> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("--server {base:?}: expected a URL like http://127.0.0.1:7357");
        }
        let token = match token_env {
            Some(var) => match std::env::var(var) {
                Ok(t) if !t.is_empty() => Some(t),
                _ => bail!("the bearer token variable {var} (--token-env) is not set or empty"),
            },
            None => None,
        };
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Remote {
            base,
            token,
            client,
        })
    }

    async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<T> {
        let url = format!("{}{path}", self.base);
        let mut req = self.client.request(method.clone(), &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.map_err(|e| {
            anyhow!(
                "cannot reach the codemode server at {} ({e}); is `codemode serve` running there?",
                self.base
            )
        })?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .with_context(|| format!("{method} {path}: the response was cut off"))?;
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
            bail!(
                "{message}{hint} [HTTP {} from {}]",
                status.as_u16(),
                self.base
            );
        }
        serde_json::from_str(&text).with_context(|| {
            format!("{method} {path}: the server's answer is not what was expected")
        })
    }

    /// `POST /api/run`.
    pub async fn call(&self, code: &str) -> Result<Outcome> {
        self.send(
            reqwest::Method::POST,
            "/api/run",
            Some(json!({ "code": code })),
        )
        .await
    }

    /// `POST /api/executions/{id}/approve`.
    pub async fn approve(&self, id: &str) -> Result<Outcome> {
        self.send(
            reqwest::Method::POST,
            &format!("/api/executions/{}/approve", enc(id)),
            Some(json!({})),
        )
        .await
    }

    /// `POST /api/executions/{id}/reject`.
    pub async fn reject(&self, id: &str, seq: u64) -> Result<Value> {
        self.send(
            reqwest::Method::POST,
            &format!("/api/executions/{}/reject", enc(id)),
            Some(json!({ "seq": seq })),
        )
        .await
    }

    /// `POST /api/executions/{id}/rollback`.
    pub async fn rollback(&self, id: &str) -> Result<RollbackReport> {
        self.send(
            reqwest::Method::POST,
            &format!("/api/executions/{}/rollback", enc(id)),
            Some(json!({})),
        )
        .await
    }

    /// `GET /api/pending`.
    pub async fn pending(&self) -> Result<Vec<PendingAction>> {
        self.send(reqwest::Method::GET, "/api/pending", None).await
    }

    /// `GET /api/executions?limit=`.
    pub async fn executions(&self, limit: usize) -> Result<Vec<Execution>> {
        self.send(
            reqwest::Method::GET,
            &format!("/api/executions?limit={limit}"),
            None,
        )
        .await
    }

    /// `GET` a path, as JSON.
    pub async fn get(&self, path: &str) -> Result<Value> {
        self.send(reqwest::Method::GET, path, None).await
    }

    /// `POST` a JSON body to a path.
    pub async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    /// `DELETE` a path.
    pub async fn delete(&self, path: &str) -> Result<Value> {
        self.send(reqwest::Method::DELETE, path, None).await
    }

    /// `GET /api/executions/{id}`.
    pub async fn execution(&self, id: &str) -> Result<Execution> {
        self.send(
            reqwest::Method::GET,
            &format!("/api/executions/{}", enc(id)),
            None,
        )
        .await
    }
}

/// Percent-encodes an id for a path segment.
/// Percent-encodes one path segment or query value.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
