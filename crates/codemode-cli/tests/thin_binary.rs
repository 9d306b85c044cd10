//! The binary stays wiring: its non-test Rust lines stay below a budget; the fronts live in
//! `codemode-server`, the connectors in their own crates. What only a terminal uses lives here
//! too, so a host mounting the server library does not carry it.

use std::path::{Path, PathBuf};

/// The budget of the binary crate's non-test lines: 1,200 for the wiring, plus the 429
/// non-test lines of the terminal's own modules that moved here from `codemode-server`
/// (`output.rs`, 348: what the terminal prints; `progress.rs`, 81: the start-up spinner),
/// plus 13 lines of wiring for `codemode openapi` through the kinds registry, the demo's own
/// file and `approvals.max_batch`, and 9 for `serve --behind-local-proxy`.
const BUDGET: usize = 1_651;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Lines before the file's `#[cfg(test)]` module (test modules close every file here).
fn non_test_lines(text: &str) -> usize {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .count()
}

#[test]
fn the_binary_crate_stays_under_its_line_budget() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let counts: Vec<(usize, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            (non_test_lines(&text), f.display().to_string())
        })
        .collect();
    let total: usize = counts.iter().map(|c| c.0).sum();
    assert!(
        total < BUDGET,
        "the binary has {total} non-test lines (budget {BUDGET}): move what is not wiring into a library crate; {counts:?}"
    );
    assert!(
        total > 200,
        "counted only {total} lines: is src/ still there?"
    );
}

#[test]
fn test_modules_are_not_counted() {
    assert_eq!(non_test_lines("a\nb\n#[cfg(test)]\nmod tests {}\n"), 2);
}
