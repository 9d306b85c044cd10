//! Errors the runtime reports to its host (never to the model: the model gets outcomes).

use crate::status::ExecutionStatus;
use crate::store::StoreError;

/// Why a runtime operation could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No execution has this id in this runtime.
    #[error("no execution with id {0:?} in this runtime; list them with executions()")]
    UnknownExecution(String),
    /// The operation needs another status.
    #[error("execution {id} is {status}; {operation} needs it to be {expected}")]
    WrongStatus {
        /// The execution.
        id: String,
        /// Its status.
        status: ExecutionStatus,
        /// What was asked.
        operation: &'static str,
        /// What it needs.
        expected: &'static str,
    },
    /// Another node (or call) changed the execution first.
    #[error("execution {id} was already {what} by another node or request")]
    AlreadyHandled {
        /// The execution.
        id: String,
        /// What happened to it.
        what: &'static str,
    },
    /// The execution was started with connectors this runtime no longer has.
    #[error("execution {id} cannot resume: connector(s) {} configured when it started are missing now; configure them again, then retry", .missing.join(", "))]
    MissingConnectors {
        /// The execution.
        id: String,
        /// The missing connector names.
        missing: Vec<String>,
    },
    /// A decision's options are wrong (bad edited arguments, a scope that does not apply).
    #[error("execution {id}: {message}; nothing was changed")]
    InvalidDecision {
        /// The execution.
        id: String,
        /// What was wrong and how to fix it.
        message: String,
    },
    /// A decision names actions that are not pending (a conflict with the execution's state).
    #[error("execution {id}: seq {seq} is not a pending action of this execution (pending: {pending:?}); nothing was changed")]
    NotPending {
        /// The execution.
        id: String,
        /// The first seq named that is not pending.
        seq: u64,
        /// The seqs that are pending.
        pending: Vec<u64>,
    },
    /// A connector or tool cannot be registered.
    #[error("invalid connector configuration: {0}")]
    InvalidConnector(String),
    /// A runtime option is invalid.
    #[error("invalid runtime configuration: {0}")]
    InvalidConfig(String),
    /// An execution id a host chose is not one the runtime accepts.
    #[error("{0:?} cannot be an execution id: use 1 to 128 ASCII letters, digits, '-' or '_' (Runtime::new_execution_id makes one)")]
    InvalidExecutionId(String),
    /// A snippet cannot be saved or found.
    #[error("snippet: {0}")]
    Snippet(String),
    /// A rule the runtime keeps was found broken: a bug in codemode, not in the code run or
    /// in the host.
    #[error(
        "execution {id}: internal error: {message}; this is a bug in codemode, please report it"
    )]
    Internal {
        /// The execution.
        id: String,
        /// What was found broken.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
