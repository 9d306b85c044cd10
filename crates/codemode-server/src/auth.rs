//! Who is calling, and what they may do: named bearer tokens with roles, checked in front of
//! the API and `/mcp`. Repeated wrong tokens from one peer are refused with 429 for a while;
//! a right token is always admitted, whatever its peer guessed before. With no token, only
//! loopback clients are served unless the host opts out ([`Access`]).
//!
//! Token values are kept only as SHA-256 digests and compared in constant time with the
//! `subtle` crate: every configured digest is compared on every request, so a wrong token
//! costs the same as a right one, and the value's length leaks nothing.

mod limit;
mod peer;
mod roles;

pub(crate) use peer::refusal as peer_refusal;
pub use peer::Access;
pub use roles::{need_for, Need, Principal, Role};

use crate::reply::ApiError;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// One named token: where its value is, and what it may do.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The environment variable holding the token's value.
    pub env: String,
    /// What the token may do.
    pub role: Role,
}

/// A token configuration that cannot be used; never shows a token's value.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The variable a token names is unset or empty.
    #[error("{field}: environment variable {var} is not set or empty (tokens are read from the environment)")]
    Unset {
        /// Where the variable is named, e.g. `auth.tokens.ci.env`.
        field: String,
        /// The variable.
        var: String,
    },
    /// Two tokens have the same value: a request could not say which one it is.
    #[error("tokens {first} and {second} have the same value: give each token its own value")]
    Duplicate {
        /// One token's name.
        first: String,
        /// The other's.
        second: String,
    },
}

/// The configured tokens, by digest, and the failure counts of peers.
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(String, Role, [u8; 32])>,
    named: bool,
    failures: Arc<limit::Failures>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.entries.iter().map(|(n, r, _)| (n, r)).collect();
        f.debug_struct("Tokens").field("names", &names).finish()
    }
}

fn digest(value: &str) -> [u8; 32] {
    Sha256::digest(value.as_bytes()).into()
}

impl Tokens {
    /// One admin token, named `admin` (as `--token-env` gives).
    pub fn single(value: &str) -> Tokens {
        Tokens {
            entries: vec![("admin".into(), Role::Admin, digest(value))],
            ..Tokens::default()
        }
    }

    /// Reads every token's value from `env`: the `--token-env`/`auth.token_env` variable as the
    /// admin token `admin`, and each `[auth.tokens.NAME]`.
    pub fn resolve(
        token_env: Option<(&str, &str)>,
        named: &BTreeMap<String, TokenConfig>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Tokens, AuthError> {
        let mut tokens = Tokens {
            named: !named.is_empty(),
            ..Tokens::default()
        };
        let read = |field: String, var: &str| match env(var) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(AuthError::Unset {
                field,
                var: var.to_string(),
            }),
        };
        let mut all = Vec::new();
        if let Some((field, var)) = token_env {
            all.push(("admin".to_string(), Role::Admin, read(field.into(), var)?));
        }
        for (name, t) in named {
            let value = read(format!("auth.tokens.{name}.env"), &t.env)?;
            all.push((name.clone(), t.role, value));
        }
        for (name, role, value) in all {
            let d = digest(&value);
            if let Some((first, _, _)) = tokens.entries.iter().find(|(_, _, e)| *e == d) {
                return Err(AuthError::Duplicate {
                    first: first.clone(),
                    second: name,
                });
            }
            tokens.entries.push((name, role, d));
        }
        Ok(tokens)
    }

    /// No token is required: every caller is `local` with every right.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `[auth.tokens]` names at least one token.
    pub fn has_named(&self) -> bool {
        self.named
    }

    /// The token `given` is, comparing against every configured digest in constant time.
    pub fn identify(&self, given: &str) -> Option<Principal> {
        let d = digest(given);
        let mut found = None;
        for (name, role, e) in &self.entries {
            if bool::from(e.ct_eq(&d)) {
                found = Some(Principal::new(name, *role));
            }
        }
        found
    }
}

/// Finds who calls (with no token configured: the [`Principal`] the host's own middleware put in
/// the request's extensions, else the `local` admin), refuses a missing or wrong
/// token (401, or 429 once the peer guessed wrong too often), and a role without the route's
/// right (403). A right token is always checked and admitted: only wrong guesses are limited,
/// so nobody's guesses (not even the same address's) lock the token's holder out.
pub async fn require_token(State(tokens): State<Tokens>, mut req: Request, next: Next) -> Response {
    let principal = if tokens.is_empty() {
        let host_said = req.extensions().get::<Principal>().cloned();
        host_said.unwrap_or_else(Principal::local)
    } else {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given.and_then(|g| tokens.identify(g.trim())) {
            Some(p) => p,
            None => return refuse_token(&tokens, &req, given.is_some()),
        }
    };
    let need = need_for(req.method(), req.uri().path());
    if !principal.role.allows(need) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "the token {:?} has the role {}, which may not {}: that needs the role {}",
                principal.name,
                principal.role,
                need.what(),
                need.roles()
            ),
        )
        .into_response();
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// The answer to a request without a right token: 401, or 429 with `Retry-After` when its
/// peer already guessed wrong too often. Only a token given and wrong counts as a guess.
fn refuse_token(tokens: &Tokens, req: &Request, guessed: bool) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if guessed {
        if let Some(wait) = tokens.failures.retry_after(peer) {
            let mut resp = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many wrong tokens from this address; a wrong token is refused for {wait} s more (a right one is still admitted)"
                ),
            )
            .into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(wait));
            return resp;
        }
        tokens.failures.fail(peer);
    }
    let mut resp = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "missing or wrong bearer token (send it as Authorization: Bearer ...)",
    )
    .into_response();
    resp.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}

/// `GET /api/whoami`: the caller's token name and role, and what the role allows.
pub async fn whoami(principal: Option<Extension<Principal>>) -> Json<serde_json::Value> {
    let p = principal.map(|e| e.0).unwrap_or_else(Principal::local);
    let allows = |n: Need| p.role.allows(n);
    Json(serde_json::json!({
        "name": p.name,
        "role": p.role,
        "allows": {
            "read": allows(Need::Read),
            "run": allows(Need::Run),
            "decide": allows(Need::Decide),
            "admin": allows(Need::Admin),
        },
    }))
}

/// The caller as the auth check found it (`local` when the check was not mounted).
pub fn caller(principal: Option<Extension<Principal>>) -> Principal {
    principal.map(|e| e.0).unwrap_or_else(Principal::local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(list: &[(&str, &str, Role)]) -> BTreeMap<String, TokenConfig> {
        list.iter()
            .map(|(n, env, role)| {
                let t = TokenConfig {
                    env: env.to_string(),
                    role: *role,
                };
                (n.to_string(), t)
            })
            .collect()
    }

    #[test]
    fn tokens_are_found_by_value_and_errors_never_show_values() {
        let env = |v: &str| match v {
            "A" => Some("alpha-secret".to_string()),
            "B" => Some("beta-secret".to_string()),
            "SAME" => Some("alpha-secret".to_string()),
            _ => None,
        };
        let t = Tokens::resolve(
            None,
            &named(&[("ci", "A", Role::Run), ("ops", "B", Role::Approve)]),
            env,
        )
        .unwrap();
        assert_eq!(t.identify("alpha-secret").unwrap().name, "ci");
        assert_eq!(t.identify("beta-secret").unwrap().role, Role::Approve);
        assert!(t.identify("alpha-secreT").is_none());
        assert!(t.identify("").is_none());
        assert!(t.has_named());

        let dup = Tokens::resolve(
            Some(("--token-env", "SAME")),
            &named(&[("ci", "A", Role::Run)]),
            env,
        )
        .unwrap_err()
        .to_string();
        assert!(dup.contains("admin") && dup.contains("ci"), "{dup}");
        assert!(!dup.contains("alpha-secret"), "{dup}");

        let unset = Tokens::resolve(None, &named(&[("x", "NOPE", Role::Run)]), env)
            .unwrap_err()
            .to_string();
        assert!(
            unset.contains("NOPE") && unset.contains("auth.tokens.x.env"),
            "{unset}"
        );
    }

    #[test]
    fn an_unknown_role_names_the_allowed_ones() {
        let e = toml::from_str::<TokenConfig>("env = \"X\"\nrole = \"root\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("run") && e.contains("approve") && e.contains("admin"),
            "{e}"
        );
    }
}
