//! A small test host and helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use codemode::{
    ExecuteRequest, ExecuteResult, Executor, Host, HostCall, HostReply, Namespace, PassEnd,
};
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};

type Answer = dyn Fn(&HostCall) -> HostReply + Send + Sync;

/// A host that records every call and answers with a closure.
pub struct TestHost {
    pub calls: Mutex<Vec<HostCall>>,
    answer: Box<Answer>,
}

impl TestHost {
    /// A host answering with `answer`.
    pub fn new(answer: impl Fn(&HostCall) -> HostReply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(TestHost {
            calls: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        })
    }

    /// A host that echoes `{namespace, method, args}` for every call.
    pub fn echo() -> Arc<Self> {
        Self::new(|c| {
            HostReply::Value(json!({"namespace": c.namespace, "method": c.method, "args": c.args}))
        })
    }

    /// The calls seen so far.
    pub fn calls(&self) -> Vec<HostCall> {
        self.calls.lock().unwrap().clone()
    }
}

impl Host for TestHost {
    fn call(&self, call: HostCall) -> BoxFuture<'_, HostReply> {
        let reply = (self.answer)(&call);
        self.calls.lock().unwrap().push(call);
        async move { reply }.boxed()
    }
}

/// The namespaces most tests use: `tasks` with a few methods.
pub fn namespaces() -> Vec<Namespace> {
    vec![Namespace {
        name: "tasks".into(),
        methods: vec!["list_tasks".into(), "create_task".into(), "get".into()],
        ..Default::default()
    }]
}

/// Runs `code` on `executor` with `host` and the test namespaces.
pub async fn run_with(
    executor: &QuickJsExecutor,
    code: &str,
    host: Arc<dyn Host>,
) -> ExecuteResult {
    executor
        .execute(
            ExecuteRequest {
                code: code.to_string(),
                namespaces: namespaces(),
                clock: Default::default(),
            },
            host,
        )
        .await
}

/// Runs `code` on a default executor with an echo host.
pub async fn run(code: &str) -> ExecuteResult {
    run_with(&QuickJsExecutor::default(), code, TestHost::echo()).await
}

/// An executor with short limits for limit tests.
pub fn executor_with(options: QuickJsOptions) -> QuickJsExecutor {
    QuickJsExecutor::new(options)
}

/// The returned value, or a panic naming what happened instead.
pub fn returned(result: &ExecuteResult) -> Value {
    match &result.end {
        PassEnd::Returned(v) => v.clone(),
        other => panic!("expected a value, got {other:?} (logs {:?})", result.logs),
    }
}

/// The failure message, or a panic naming what happened instead.
pub fn failure(result: &ExecuteResult) -> String {
    match &result.end {
        PassEnd::Failed(m) => m.clone(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// A [`codemode_quickjs::ProcessExecutor`] on the crate's `codemode-sandbox` program.
pub async fn process_executor(
    options: QuickJsOptions,
    tune: impl FnOnce(codemode_quickjs::ProcessOptions) -> codemode_quickjs::ProcessOptions,
) -> codemode_quickjs::ProcessExecutor {
    let command = codemode_quickjs::WorkerCommand::new(
        env!("CARGO_BIN_EXE_codemode-sandbox"),
        Vec::<String>::new(),
    );
    codemode_quickjs::ProcessExecutor::start(
        options,
        tune(codemode_quickjs::ProcessOptions::new(command)),
    )
    .await
    .expect("the sandbox processes start")
}

/// Runs `code` on any executor with `host` and the test namespaces.
pub async fn run_on(executor: &dyn Executor, code: &str, host: Arc<dyn Host>) -> ExecuteResult {
    executor
        .execute(
            ExecuteRequest {
                code: code.to_string(),
                namespaces: namespaces(),
                clock: Default::default(),
            },
            host,
        )
        .await
}
