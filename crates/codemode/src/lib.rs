//! Code Mode: a model writes code against typed connector globals; this crate is the
//! durable runtime behind it.
//!
//! The crate knows no engine, database or protocol. A sandbox engine implements
//! [`Executor`], a database implements [`Store`] (and, for the workspace connector's files,
//! [`FileStore`]), and a service implements [`Connector`].
//! [`Runtime`] ties them together: it logs every connector call, replays the log on every
//! pass, pauses for approval, and rolls back.
//!
//! [`CodeTool`] is the stateless alternative for hosts that only want sandboxed code over
//! their tools: the same sandbox, tool description, discovery and argument checks, with no
//! store, log, replay or approvals.
//!
//! Runnable programs that use the library are in `examples/` at the workspace root.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod clock;
pub mod code_tool;
pub mod connector;
pub mod discovery;
pub mod error;
pub mod error_code;
pub mod executor;
pub mod files;
pub mod glob;
pub mod kind;
pub mod model;
pub mod policy;
pub mod runtime;
pub mod rust_connector;
mod schema_check;
pub mod secrets;
pub mod shape;
pub mod status;
pub mod store;
pub mod tape;
pub mod value;

pub use code_tool::{CodeOutcome, CodeTool, CodeToolBuilder};
pub use connector::{
    CallContext, Connector, ExecutionEndStatus, PassEndStatus, ReplayPolicy, ToolError, ToolSpec,
};
pub use error::RuntimeError;
pub use error_code::{ErrorCode, ERROR_CODES};
pub use executor::{
    ExecuteRequest, ExecuteResult, Executor, Host, HostCall, HostReply, Namespace, PassEnd,
    SDK_NAMESPACE,
};
pub use files::{
    FileChange, FileChangeOutcome, FileInfo, FileOp, FileStore, StoreWithFiles, StoredFile,
    WorkspaceUsage,
};
pub use model::{
    audit_view, now_ms, Actor, ApprovalScope, Decision, DecisionKind, Execution, ExecutionSummary,
    LogEntry, Outcome, PendingAction, RevertFailure, RollbackReport, Snippet, CODE_PREVIEW_CHARS,
};
pub use runtime::{
    Approval, CommitObserver, EventObserver, Runtime, RuntimeBuilder, RuntimeEvent, SaveSnippet,
    TraceCarrier, TransformResult, CANCEL_GRACE, DEFAULT_MAX_BATCH, EVENT_BUFFER,
    MAX_EVENT_ERROR_CHARS, MAX_MAX_BATCH, TRACE_TARGET, WAIT_POLL,
};
pub use rust_connector::{RustConnector, RustTool};
pub use schema_check::schema_problem;
pub use shape::ResultShape;
pub use status::{EntryState, ExecutionStatus};
pub use store::{
    check_transition, Claim, Commit, Deletion, Lease, RetentionAges, Store, StoreError, Transition,
    DEFAULT_AUDIT_MAX_AGE, DEFAULT_RETENTION_MIN_AGE,
};
pub use tape::{random_seed, ClockRun, ClockTape, PassClock, StepMark};
pub use value::{
    canonical_eq, truncate_result, truncate_text, TruncateOptions, DEFAULT_MAX_EXECUTIONS,
    DEFAULT_PAUSED_TTL_MS, MAX_DURABLE_VALUE_CHARS,
};
