//! A result cut to the model's budget, saved whole to the workspace: the cut answer's last
//! log line names the file, so the model reads the rest with `state.readJson(path)`.

use codemode::value::{truncate_outcome, TruncateOptions};
use codemode::Outcome;
use codemode_workspace::Workspace;

/// [`truncate_outcome`], and when a completed result was cut and `workspace` is on: the whole
/// result saved as `/results/{executionId}.json`, its path named in a last log line and
/// returned. A failed save is said in the log line instead (the cut answer still goes out).
pub async fn truncate_and_save(
    outcome: Outcome,
    options: TruncateOptions,
    workspace: Option<&Workspace>,
) -> (Outcome, Option<String>) {
    let whole = match (&outcome, workspace) {
        (Outcome::Completed { result, .. }, Some(_)) => Some(result.clone()),
        _ => None,
    };
    let cut = truncate_outcome(outcome, options);
    let (Some(ws), Some(whole)) = (workspace, whole) else {
        return (cut, None);
    };
    let Outcome::Completed {
        execution_id,
        result,
        mut logs,
    } = cut
    else {
        return (cut, None);
    };
    if result == whole {
        let cut = Outcome::Completed {
            execution_id,
            result,
            logs,
        };
        return (cut, None);
    }
    let saved = match ws.save_value(&execution_id, &whole).await {
        Ok(path) => {
            logs.push(format!(
                "[codemode] the whole result is saved in the workspace as {path}; read it (or parts of it) with state.readJson({path:?}) in the next call"
            ));
            Some(path)
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot save a cut result to the workspace");
            logs.push(format!(
                "[codemode] the whole result could not be saved to the workspace: {e}"
            ));
            None
        }
    };
    let cut = Outcome::Completed {
        execution_id,
        result,
        logs,
    };
    (cut, saved)
}
