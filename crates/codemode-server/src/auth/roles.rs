//! Roles, the right each route needs, and who a request comes from.

use axum::http::Method;
use serde::{Deserialize, Serialize};

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `/mcp`, `POST /api/run` and every read.
    Run,
    /// Every read, and approve, reject, roll back.
    Approve,
    /// Everything.
    Admin,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Run => "run",
            Role::Approve => "approve",
            Role::Admin => "admin",
        })
    }
}

/// The right a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Reading executions, pending actions, snippets, connectors, the catalog, workspace files.
    Read,
    /// Running code (`/mcp`, `POST /api/run`).
    Run,
    /// Approving, rejecting, rolling back, cancelling.
    Decide,
    /// Deleting, pruning, expiring, saving or deleting snippets, anything else.
    Admin,
}

impl Need {
    /// What the right is for, in words.
    pub fn what(self) -> &'static str {
        match self {
            Need::Read => "read",
            Need::Run => "run code",
            Need::Decide => "approve, reject, roll back or cancel",
            Need::Admin => "delete, prune, expire or change snippets",
        }
    }

    /// The roles that have it, in words.
    pub fn roles(self) -> &'static str {
        match self {
            Need::Read => "run, approve or admin",
            Need::Run => "run or admin",
            Need::Decide => "approve or admin",
            Need::Admin => "admin",
        }
    }
}

impl Role {
    /// Whether the role has the right `need`.
    pub fn allows(self, need: Need) -> bool {
        match self {
            Role::Admin => true,
            Role::Run => matches!(need, Need::Read | Need::Run),
            Role::Approve => matches!(need, Need::Read | Need::Decide),
        }
    }
}

/// The right `method path` needs. Reads are `GET`/`HEAD`; a state-changing route not named
/// here needs `admin`, so a new route is closed until it is placed.
pub fn need_for(method: &Method, path: &str) -> Need {
    if path == "/mcp" || path.starts_with("/mcp/") {
        return Need::Run;
    }
    if method == Method::GET || method == Method::HEAD {
        return Need::Read;
    }
    if method == Method::POST {
        if path == "/api/run" {
            return Need::Run;
        }
        if let Some(rest) = path.strip_prefix("/api/executions/") {
            if let Some((_, action)) = rest.rsplit_once('/') {
                if matches!(
                    action,
                    "approve" | "reject" | "rollback" | "cancel" | "resume"
                ) {
                    return Need::Decide;
                }
            }
        }
    }
    Need::Admin
}

/// Who a request comes from: the token's name and role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's name (`admin` for `--token-env`, `local` when no token is configured).
    pub name: String,
    /// What it may do.
    pub role: Role,
}

impl Principal {
    /// A principal named `name` with `role`.
    pub fn new(name: &str, role: Role) -> Self {
        Principal {
            name: name.to_string(),
            role,
        }
    }

    /// The caller of a server that requires no token: `local`, with every right.
    pub fn local() -> Self {
        Principal::new("local", Role::Admin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_need_their_rights() {
        let post = Method::POST;
        assert_eq!(need_for(&Method::GET, "/api/executions"), Need::Read);
        assert_eq!(need_for(&post, "/api/run"), Need::Run);
        assert_eq!(need_for(&post, "/mcp"), Need::Run);
        assert_eq!(need_for(&Method::DELETE, "/mcp"), Need::Run);
        assert_eq!(need_for(&post, "/api/executions/x/approve"), Need::Decide);
        // Taking over an interrupted run is a decision, like approving it.
        assert_eq!(need_for(&post, "/api/executions/x/resume"), Need::Decide);
        assert_eq!(need_for(&Method::DELETE, "/api/executions/x"), Need::Admin);
        assert_eq!(need_for(&post, "/api/snippets"), Need::Admin);
        // The audit export and the metrics are reads, open to every role.
        assert_eq!(need_for(&Method::GET, "/api/audit"), Need::Read);
        assert_eq!(need_for(&Method::GET, "/metrics"), Need::Read);
        // The workspaces' files are reads, open to every role.
        assert_eq!(need_for(&Method::GET, "/api/workspaces"), Need::Read);
        let files = "/api/workspace/default/files";
        assert_eq!(need_for(&Method::GET, files), Need::Read);
        assert_eq!(need_for(&post, files), Need::Admin);
        assert!(!Role::Run.allows(Need::Decide));
        assert!(!Role::Approve.allows(Need::Run));
        assert!(Role::Admin.allows(Need::Admin));
    }
}
