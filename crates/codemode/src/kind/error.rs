//! What can go wrong registering kinds, reading a connector's table and starting it.

/// A kind that cannot be registered, or a connector's table that cannot be read: each says
/// where (`connectors.NAME`, or the key) and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    /// Two kinds with one `type` name.
    #[error("two connector kinds are named {kind:?}; each kind's `type` name must be unique")]
    DuplicateKind {
        /// The name.
        kind: String,
    },
    /// A table without `type`.
    #[error("connectors.{connector}: no `type`; write type = \"KIND\" with one of the registered kinds: {}", list(.known))]
    NoKind {
        /// The connector's name.
        connector: String,
        /// The registered kinds.
        known: Vec<String>,
    },
    /// A `type` no kind is registered for.
    #[error("connectors.{connector}: unknown connector type {kind:?}; the registered kinds are {}", list(.known))]
    UnknownKind {
        /// The connector's name.
        connector: String,
        /// The `type` as written.
        kind: String,
        /// The registered kinds.
        known: Vec<String>,
    },
    /// A call cap or timeout of 0.
    #[error("`{key} = 0` would {what}; use at least 1, or leave it out for the default")]
    Zero {
        /// Where: `connectors.NAME.KEY`.
        key: String,
        /// What 0 would do.
        what: String,
    },
    /// A key (or the whole table) that cannot be used.
    #[error("{key}: {message}")]
    Invalid {
        /// Where: `connectors.NAME` or `connectors.NAME.KEY`.
        key: String,
        /// What is wrong, and what to write instead.
        message: String,
    },
}

/// The names, each quoted, comma-separated.
fn list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    quoted.join(", ")
}

/// A secret the configuration names whose environment variable is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: environment variable {var} is not set (secrets are read from the environment)")]
pub struct MissingSecret {
    /// Where the reference is written, e.g. `connectors.github.env.TOKEN`.
    pub field: String,
    /// The variable.
    pub var: String,
}

/// Something a kind needs that its host did not provide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the host provides no `{type_name}` ({what}); a host that starts this kind of connector must add one to the start's resources")]
pub struct MissingResource {
    /// The type asked for.
    pub type_name: &'static str,
    /// What it is for.
    pub what: String,
}

/// A connector that could not start: which one and why (secret values scrubbed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// A secret it names is not set; nothing was started.
    #[error(transparent)]
    MissingSecret(#[from] MissingSecret),
    /// Its kind is not the one registered under its `type` name.
    #[error("connectors.{connector}: no kind {kind:?} is registered with this host; the registered kinds are {}", list(.known))]
    Unregistered {
        /// The connector's name.
        connector: String,
        /// Its kind's name.
        kind: String,
        /// The registered kinds.
        known: Vec<String>,
    },
    /// Its kind's start failed.
    #[error("connectors.{connector}: {message}")]
    Failed {
        /// The connector's name.
        connector: String,
        /// Why, in the kind's words, with every secret value it holds scrubbed.
        message: String,
    },
}
