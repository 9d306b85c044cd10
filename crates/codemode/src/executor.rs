//! The boundary between the runtime and a sandbox engine.
//!
//! An [`Executor`] runs model code once, in a fresh sandbox, with one global per
//! [`Namespace`]. Every call the code makes on a namespace goes to the [`Host`], which
//! answers with a [`HostReply`]. The executor knows nothing of logs, replay or approvals.

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::tape::{ClockRun, PassClock};

/// The namespace of the platform SDK (`codemode.search`, `describe`, `step`, `run`).
pub const SDK_NAMESPACE: &str = "codemode";

/// A global the sandbox exposes: `name.method(args)` becomes a [`HostCall`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Namespace {
    /// The global's name (a valid identifier, checked by the runtime).
    pub name: String,
    /// The callable methods.
    pub methods: Vec<String>,
    /// For a connector called with positional arguments, one entry per method (`None` for a
    /// method whose input declares no properties, which takes its one object); empty when
    /// every method takes one object. The sandbox turns the arguments back into the object,
    /// so the [`HostCall`] always carries the object form.
    pub positional: Vec<Option<PositionalParams>>,
    /// Why the connector is unavailable (it failed to start), when it is: the global then has
    /// no methods, and every call on it throws an error that says so.
    pub unavailable: Option<String>,
}

/// How a positional method's arguments map onto its input object's properties.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PositionalParams {
    /// The property each argument sets, in call order: required ones first, then optional ones,
    /// each in the order the input schema lists them.
    pub names: Vec<String>,
    /// How many leading arguments are required.
    pub required: usize,
}

/// What the executor is asked to run.
#[derive(Debug, Clone)]
pub struct ExecuteRequest {
    /// The model's code, in any accepted form (the executor normalises it).
    pub code: String,
    /// The connector namespaces, besides `codemode`.
    pub namespaces: Vec<Namespace>,
    /// What `Date.now()`, `new Date()` and `Math.random()` replay (see [`crate::tape`]).
    pub clock: PassClock,
}

/// One call from the sandbox to the host.
///
/// Connector calls carry the one argument the code passed (`{}` when none). The SDK
/// namespace `codemode` uses these methods and argument shapes:
/// - `search {query}`, `describe {target}`: answered with a value;
/// - `step {name}`: answered with `{replay: true, value}` (return `value` without running the
///   closure) or `{replay: false, seq}` (run the closure, then report it);
/// - `step_result {seq, value, clock?}` / `step_error {seq, error, clock?}`: the closure's
///   outcome; `clock` is `[readings, draws]`, the clock readings and `Math.random` draws the
///   pass had taken when the closure ended, which a replay of the step skips to (a replayed
///   step's answer carries them as `clock` too);
/// - `run {name, input, chain}`: answered with [`HostReply::RunCode`] or a value (`{error}`).
///   `chain` names the snippets the call was made from, outermost first (absent or empty for
///   the model's own code). The executor works it out from where the call was made, not from
///   anything the code holds or passes, so every path to `run` carries it; the host refuses a
///   snippet already in the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCall {
    /// The namespace (connector name or `codemode`).
    pub namespace: String,
    /// The method.
    pub method: String,
    /// The argument, as JSON.
    pub args: Value,
}

/// How the host answers a [`HostCall`].
#[derive(Debug, Clone, PartialEq)]
pub enum HostReply {
    /// Resolve the call's promise with this value.
    Value(Value),
    /// Reject the call's promise with an `Error` carrying this message (catchable).
    Throw(String),
    /// Stop the pass for good: no more code runs, nothing in the sandbox can catch it.
    Abort,
    /// Run this code (a saved snippet) as an async function of `input` and resolve with its result.
    RunCode {
        /// The snippet's source, in any accepted form.
        code: String,
        /// The value bound to `input` inside the snippet.
        input: Value,
    },
}

/// The host side of a pass: the runtime implements it.
///
/// Calls may be in flight together (`Promise.all`). An executor makes each call when the code
/// makes it, polls new calls in the order the code made them, and delivers each reply to the
/// code as its future finishes, one at a time, running every job a delivery causes before it
/// polls again: the host decides the order futures finish in, and a replay depends on it.
pub trait Host: Send + Sync {
    /// Answers one call from the sandbox.
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply>;

    /// [`Host::call`] on a shared host, its future owning the host. This default makes the
    /// call when the future is first polled; a host that counts calls as they are made
    /// overrides it to make the call now.
    fn call_shared(self: Arc<Self>, call: HostCall) -> BoxFuture<'static, HostReply>
    where
        Self: 'static,
    {
        Box::pin(async move { self.call(call).await })
    }

    /// Takes one console line as the code writes it (the executor still returns every line
    /// in [`ExecuteResult::logs`]); it must be quick and must not block.
    fn console(&self, _line: &str) {}

    /// Tells the host the code settled (returned or threw): no reply reaches the code from
    /// now on, and a call made from now on is refused. Calls made before it still run.
    fn settled(&self) {}

    /// Takes the clock readings the code took since the last call or this method's last
    /// call, beyond those [`ExecuteRequest::clock`] replayed; an executor calls it before it
    /// forwards the next call and when the pass ends. It must be quick and must not block.
    fn clock_readings(&self, _runs: &[ClockRun]) {}

    /// A flag the host sets to stop the pass at its next instruction boundary (a cancel), or
    /// `None` if this host never stops a pass that way.
    fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        None
    }
}

/// How a pass ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PassEnd {
    /// The code returned this value (`undefined` as `null`).
    Returned(Value),
    /// The code threw, did not parse, or hit a limit; the message says what and where. A
    /// thrown error begins with its name (`TypeError: ...`) or `Uncaught`; a limit the
    /// executor enforces begins with the fixed form [`crate::ErrorCode`] reads
    /// (`Time limit:`, `Memory limit:`, `Console limit:`, `Stack limit:`).
    Failed(String),
    /// The host answered [`HostReply::Abort`]; the pass stopped there.
    Aborted,
}

/// What one pass produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteResult {
    /// How it ended.
    pub end: PassEnd,
    /// Captured console output, one line per call.
    pub logs: Vec<String>,
}

/// A sandbox engine that runs model code once.
///
/// `codemode-quickjs` provides the real one. An executor exposes one global per
/// [`Namespace`] (plus `codemode`), turns each call on them into a [`HostCall`], and resolves,
/// rejects or aborts the call as the [`Host`]'s [`HostReply`] says. The toy below is no
/// JavaScript engine: it reads the code as `connector.method` and makes that one call.
///
/// ```
/// use async_trait::async_trait;
/// use codemode::{CodeOutcome, CodeTool, ExecuteRequest, ExecuteResult, Executor, Host};
/// use codemode::{HostCall, HostReply, PassEnd, RustConnector, RustTool};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// struct OneCall;
///
/// #[async_trait]
/// impl Executor for OneCall {
///     async fn execute(&self, request: ExecuteRequest, host: Arc<dyn Host>) -> ExecuteResult {
///         let code = request.code.trim();
///         let Some((namespace, method)) = code.split_once('.') else {
///             let end = PassEnd::Failed(format!("expected connector.method, got {code:?}"));
///             return ExecuteResult { end, logs: vec![] };
///         };
///         let call = HostCall { namespace: namespace.into(), method: method.into(), args: json!({}) };
///         let end = match host.call(call).await {
///             HostReply::Value(value) => PassEnd::Returned(value),
///             HostReply::Throw(message) => PassEnd::Failed(message),
///             HostReply::Abort => PassEnd::Aborted,
///             HostReply::RunCode { .. } => PassEnd::Failed("snippets are not supported".into()),
///         };
///         ExecuteResult { end, logs: vec![format!("called {code}")] }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), codemode::RuntimeError> {
/// let clock = RustConnector::new("clock")
///     .tool(RustTool::new("now", |_args, _ctx| async { Ok(json!(1_700_000_000)) }).read_only());
/// let tool = CodeTool::builder(Arc::new(OneCall)).connector(clock).build()?;
/// assert_eq!(
///     tool.call("clock.now").await,
///     CodeOutcome::Completed { result: json!(1_700_000_000), logs: vec!["called clock.now".into()] }
/// );
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Executor: Send + Sync {
    /// Runs one pass; failures are reported in the result, never as a panic.
    async fn execute(&self, request: ExecuteRequest, host: Arc<dyn Host>) -> ExecuteResult;

    /// Names the executor reserves as globals (a connector may not use them).
    fn reserved_globals(&self) -> &[&str] {
        &[]
    }

    /// The longest one pass may run, if the executor enforces a limit.
    fn pass_deadline(&self) -> Option<std::time::Duration> {
        None
    }
}
