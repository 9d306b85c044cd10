//! Taking over interrupted work at start: every execution of this runtime left `running` by a
//! node that stopped is resumed once its lease has expired, and every rollback cut after a
//! revert is finished (its decision recorded) once its hold has expired.

use codemode::{ExecutionStatus, Outcome, Runtime, RuntimeError};
use std::sync::Arc;
use std::time::Duration;

/// Lists the `running` executions and resumes each (in a task of its own) once its lease
/// expires; a run another node finishes first is left alone. `report` gets one line for what
/// was found and one per run resumed or given up, for the server's log.
pub fn resume_interrupted(
    runtime: Arc<Runtime>,
    report: impl Fn(String) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    let report = Arc::new(report);
    tokio::spawn(async move {
        finish_rollbacks(runtime.clone(), report.clone()).await;
        let running = match runtime
            .executions_with_status(ExecutionStatus::Running, None)
            .await
        {
            Ok(list) => list,
            Err(e) => {
                report(format!("cannot list interrupted runs to resume: {e}"));
                return;
            }
        };
        if running.is_empty() {
            return;
        }
        let secs = runtime.lease_duration().as_millis().div_ceil(1000);
        report(format!(
            "{} run(s) left running: resuming each once its lease ({secs} s) has expired",
            running.len()
        ));
        let poll =
            (runtime.lease_duration() / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
        for execution in running {
            let (runtime, report) = (runtime.clone(), report.clone());
            tokio::spawn(async move {
                let id = execution.id;
                loop {
                    match runtime.resume_interrupted(&id).await {
                        Ok(outcome) => {
                            report(format!(
                                "resumed interrupted execution {id}: {}",
                                status(&outcome)
                            ));
                            return;
                        }
                        Err(RuntimeError::AlreadyHandled { .. }) => tokio::time::sleep(poll).await,
                        // Finished, cancelled or expired elsewhere: nothing left to take over.
                        Err(
                            RuntimeError::WrongStatus { .. } | RuntimeError::UnknownExecution(_),
                        ) => return,
                        Err(e) => {
                            report(format!("cannot resume execution {id}: {e}"));
                            return;
                        }
                    }
                }
            });
        }
    })
}

/// Finishes every interrupted rollback, each in a task of its own, once its hold expires.
async fn finish_rollbacks(runtime: Arc<Runtime>, report: Arc<dyn Fn(String) + Send + Sync>) {
    let ids = match runtime.interrupted_rollbacks().await {
        Ok(ids) => ids,
        Err(e) => {
            report(format!("cannot list interrupted rollbacks to finish: {e}"));
            return;
        }
    };
    if ids.is_empty() {
        return;
    }
    report(format!(
        "{} rollback(s) cut before they finished: finishing each once its hold has expired",
        ids.len()
    ));
    let poll =
        (runtime.lease_duration() / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    for id in ids {
        let (runtime, report) = (runtime.clone(), report.clone());
        tokio::spawn(async move {
            loop {
                match runtime.finish_rollback(&id).await {
                    Ok(done) => {
                        report(format!(
                            "finished the interrupted rollback of {id}: {}",
                            done.status
                        ));
                        return;
                    }
                    Err(RuntimeError::AlreadyHandled { .. }) => tokio::time::sleep(poll).await,
                    Err(RuntimeError::UnknownExecution(_)) => return,
                    Err(e) => {
                        report(format!("cannot finish the rollback of {id}: {e}"));
                        return;
                    }
                }
            }
        });
    }
}

fn status(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Completed { .. } => "completed",
        Outcome::Paused { .. } => "paused for approval",
        Outcome::Error { .. } => "ended with an error",
    }
}
