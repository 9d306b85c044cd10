//! Upgrade fixtures: executions one release recorded (paused, running, with applied and
//! pending entries, a saved snippet), kept in the repository and resumed by every later build.
//!
//! `record.rs` records them with this build (the `upgrade-fixtures` program writes them to
//! `fixtures/upgrade/<release and schema versions>/`); `exercise.rs` approves, resumes and
//! rolls them back and describes what came of it, which `tests/upgrade.rs` compares with the
//! outcomes the recording release wrote beside them; `dump.rs` loads a PostgreSQL dump.
//! Both sides build the same connectors ([`fixture_runtime`]), so a later build that resumes
//! an old run differently (normalisation, the sandbox glue, the schema) fails the test.

mod dump;
mod exercise;
mod record;

pub use dump::{clean_dump, load_dump};
pub use exercise::exercise;
pub use record::{plan, record, record_interrupted, INTERRUPTED_ID, INTERRUPTED_STATES};

use crate::journal::{ledger, CrashPoint};
use crate::probe::Probe;
use codemode::{Runtime, RuntimeError, Store};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The runtime name every fixture execution is recorded under.
pub const RUNTIME_NAME: &str = "default";

/// The SQLite fixture's file name in a fixture directory.
pub const SQLITE_FILE: &str = "codemode.db";

/// The PostgreSQL fixture's file name (a plain SQL dump) in a fixture directory.
pub const POSTGRES_FILE: &str = "postgres.sql";

/// The expected outcomes' file name in a fixture directory.
pub const EXPECTED_FILE: &str = "expected.json";

/// Where the fixture directories live: `fixtures/upgrade/` of this crate.
pub fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upgrade")
}

/// The directory name of this build's fixtures: the release and both schema versions, so a
/// schema change (or a release) gets a directory of its own and older ones stay.
pub fn fixture_dir_name() -> String {
    format!(
        "v{}-sqlite{}-postgres{}",
        env!("CARGO_PKG_VERSION"),
        codemode_sqlite::SCHEMA_VERSION,
        codemode_postgres::SCHEMA_VERSION
    )
}

/// What a fixture directory's `expected.json` holds: who recorded it, what to do with each
/// execution, and what that must produce.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expected {
    /// The release that recorded the fixtures, e.g. `codemode 0.1.0`.
    pub recorded_by: String,
    /// The schema versions of the SQLite file and the PostgreSQL dump.
    pub schema: SchemaVersions,
    /// What the test does, in order.
    pub steps: Vec<Step>,
    /// What [`exercise`] must describe after doing them.
    pub outcomes: serde_json::Value,
}

/// The schema versions a fixture was recorded at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaVersions {
    /// `PRAGMA user_version` of the SQLite file.
    pub sqlite: i64,
    /// `codemode_schema_version.version` of the PostgreSQL dump.
    pub postgres: i64,
}

/// One thing the test does to a recorded execution (or a new one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The execution acted on (for `call`, the id the new one gets).
    pub execution: String,
    /// What is done.
    #[serde(rename = "do")]
    pub op: Op,
    /// Who decides (approve, rollback); `local` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// For `approve`: the pending actions approved (the others are rejected); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seqs: Option<Vec<u64>>,
    /// For `call`: the code of the new execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// What a [`Step`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `Runtime::approve_with` a paused execution.
    Approve,
    /// `Runtime::resume_interrupted` a running execution whose node died.
    Resume,
    /// `Runtime::rollback_with` a paused or finished execution.
    Rollback,
    /// Runs new code (a saved snippet, by name) as a new execution with the given id.
    Call,
    /// Only describes the execution.
    Inspect,
}

/// The runtime the fixtures are recorded and resumed with: the `probe` connector (wired to
/// `probe`), the `ledger` connector writing to `journal`, the probe's calls one at a time (so
/// the order of a batch's writes, and each result's run count, never depends on timing), and
/// retention off.
pub fn fixture_runtime(
    store: Arc<dyn Store>,
    probe: &Probe,
    journal: &Path,
) -> Result<Runtime, RuntimeError> {
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(Default::default()));
    builder(store, executor, probe, journal, CrashPoint::None).build()
}

/// The builder [`fixture_runtime`] uses, with the ledger dying at `crash`.
fn builder(
    store: Arc<dyn Store>,
    executor: Arc<dyn codemode::Executor>,
    probe: &Probe,
    journal: &Path,
    crash: CrashPoint,
) -> codemode::RuntimeBuilder {
    Runtime::builder(store, executor)
        .name(RUNTIME_NAME)
        .max_executions(usize::MAX)
        .connector(probe.connector("probe"))
        .connector(ledger(journal.to_path_buf(), crash))
        .max_in_flight_for("probe", 1)
}

/// Fields of an error outcome added after the first fixtures were recorded (`code` and
/// `retryable`, see `docs/errors.md`); absent from a recording, they are not a difference.
const ADDED_ERROR_FIELDS: &[&str] = &["code", "retryable"];

/// Where `got` differs from `want`, as one line per differing place (`steps[2].returned`),
/// at most `limit` of them.
pub fn differences(want: &serde_json::Value, got: &serde_json::Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    differ("", want, got, limit, &mut out);
    out
}

fn differ(
    at: &str,
    want: &serde_json::Value,
    got: &serde_json::Value,
    limit: usize,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    if out.len() >= limit || want == got {
        return;
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let keys: std::collections::BTreeSet<&String> = w.keys().chain(g.keys()).collect();
            for key in keys {
                // A field an error outcome gained after the recording release: the recording
                // could not say it, and everything it did say must still hold.
                let added = !w.contains_key(key.as_str())
                    && ADDED_ERROR_FIELDS.contains(&key.as_str())
                    && g.get("status").and_then(Value::as_str) == Some("error");
                if added {
                    continue;
                }
                let (w, g) = (
                    w.get(key).unwrap_or(&Value::Null),
                    g.get(key).unwrap_or(&Value::Null),
                );
                differ(&format!("{at}.{key}"), w, g, limit, out);
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (w, g)) in w.iter().zip(g).enumerate() {
                differ(&format!("{at}[{i}]"), w, g, limit, out);
            }
        }
        _ => out.push(format!(
            "{}: want {want}, got {got}",
            if at.is_empty() { "." } else { at }
        )),
    }
}
