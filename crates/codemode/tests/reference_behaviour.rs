//! The rows of `docs/reference.md` that claim a behaviour do what they say. Each entry of
//! [`ROWS`] names a row by a span of its "Here" column, quotes the words of its last column the
//! check holds it to (so a row reworded must have its check looked at again), and runs the
//! check: a runtime on a SQLite store in a temporary directory and the QuickJS sandbox, or the
//! stateless code tool.

use checks::*;
use futures::future::BoxFuture;
use std::path::{Path, PathBuf};

/// Fails the check with a message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

#[path = "support/reference_checks.rs"]
mod checks;

/// What a check found wrong, or nothing.
type Checked = Result<(), String>;
/// A check, given a fresh temporary directory.
type Check = fn(PathBuf) -> BoxFuture<'static, Checked>;

/// (a span of the row's "Here" column, words its last column says, the check).
const ROWS: &[(&str, &str, Check)] = &[
    (
        "`codemode::RuntimeBuilder::max_snippet_depth`",
        "A snippet that runs itself is refused at once; nesting is capped (default 8).",
        snippet_depth,
    ),
    (
        "`codemode::Runtime::tool`",
        "declares the connectors' methods, each connector whole or not at all, only while it fits its token budget (default 2,000",
        description_budget,
    ),
    (
        "`codemode::Runtime::tool_with`",
        "An unknown placeholder is an error naming it and the allowed ones.",
        runtime_template,
    ),
    (
        "`codemode::Runtime::approve`",
        "Fail-closed: a tool without a policy that is not read-only needs approval.",
        fail_closed,
    ),
    (
        "`codemode::Runtime::rollback`",
        "Reverts newest first and reports what could not be undone",
        rollback_report,
    ),
    (
        "`codemode::Runtime::delete_execution`",
        "A running or paused execution is refused (reject or expire it first)",
        delete_refuses_live_runs,
    ),
    (
        "`codemode::Runtime::save_snippet`",
        "An execution that did not complete is refused unless `force` is set, and an existing name unless `replace` is set",
        save_snippet_flags,
    ),
    (
        "`codemode.run` in the sandbox",
        "A missing snippet or connector resolves to `{ error }`",
        missing_snippet_or_connector,
    ),
    (
        "`codemode::ClockTape`",
        "on replay each returns what the pass that first ran that point read",
        clock_and_chance_replay,
    ),
    (
        "`codemode::RuntimeBuilder::transform_result`",
        "the audit record keeps the untransformed value",
        transform_keeps_original,
    ),
    (
        "`codemode::RustConnector::positional_args`",
        "Arguments map onto the input schema's properties, required ones first; the sandbox builds the object, so the log records the object form.",
        positional_arguments,
    ),
    (
        "`codemode::CodeTool::builder`",
        "A tool that requires approval is left out (not a method in the sandbox, not in the types or search)",
        code_tool_leaves_out_approval,
    ),
    (
        "`codemode::CodeToolBuilder::description`",
        "an unknown placeholder makes `build` fail naming it and the allowed ones",
        code_tool_template,
    ),
    (
        "`codemode::truncate_result`",
        "A value that fits the budget is left alone; a larger one is cut structurally and stays valid JSON of the same shape within the budget",
        truncation,
    ),
];

/// The table's rows as (Here, Difference) cells.
fn rows() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference.md");
    let doc = std::fs::read_to_string(path).expect("docs/reference.md is readable");
    doc.lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| Reference"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (cells.len() >= 3).then(|| (cells[1].to_string(), cells[2..].join(" | ")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_row_that_claims_a_behaviour_has_it() {
    let rows = rows();
    let mut failures = Vec::new();
    for (here, claim, check) in ROWS {
        let Some((_, difference)) = rows.iter().find(|(h, _)| h.contains(here)) else {
            failures.push(format!("no row of the table names {here}"));
            continue;
        };
        if !difference.contains(claim) {
            failures.push(format!(
                "the row of {here} no longer says {claim:?}; it says {difference:?} (check it again and update its entry here)"
            ));
            continue;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        if let Err(e) = check(dir.path().to_path_buf()).await {
            failures.push(format!("{here}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{} rows of docs/reference.md checked", ROWS.len());
}
