//! What codemode's tests share: the one rule for a missing prerequisite, where the
//! repository's fixtures are, and the plain-text TLS server of the `no_process_provider`
//! tests ([`tls`]).
//!
//! A test that needs something from outside the repository (a PostgreSQL server, the npm
//! fixtures, a browser) asks for it here. On a developer's machine a missing prerequisite is a
//! loud `SKIPPED` notice and the test returns early; when the environment variable `CI` is set it
//! is a failure naming what is missing and how to install it, so CI never passes vacuously.

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod tls;

use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether a missing prerequisite must fail the test: `true` when the environment variable `CI`
/// is set.
pub fn required() -> bool {
    std::env::var_os("CI").is_some()
}

/// Reports that `what` is missing: under `CI` a panic saying so and `fix`; otherwise a loud
/// `SKIPPED` notice on stderr (the caller then returns).
pub fn missing(what: &str, fix: &str) {
    let message = skip_message(what, fix);
    assert!(!required(), "CI is set and {message}");
    // Written to the stderr handle itself: the test harness captures `eprintln!`.
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!!!! SKIPPED: {message} !!!!!!!!!!\n"
    );
}

/// `found` when it is `Some`; otherwise [`missing`] (a failure under `CI`) and `None`.
pub fn require<T>(found: Option<T>, what: &str, fix: &str) -> Option<T> {
    if found.is_none() {
        missing(what, fix);
    }
    found
}

/// The sentence a skip or a failure says.
pub fn skip_message(what: &str, fix: &str) -> String {
    format!("{what} is missing ({fix})")
}

/// The repository's `fixtures/` folder (the npm fixtures' `package.json` lives there).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// `fixtures/node_modules` when `npm ci` has installed it (with the MCP SDK and the real servers
/// and specs); otherwise [`missing`] and `None`.
pub fn npm_fixtures() -> Option<PathBuf> {
    let dir = fixtures_dir().join("node_modules");
    let installed = dir.join("@modelcontextprotocol/sdk/package.json").is_file();
    require(
        installed.then_some(dir),
        "the npm test fixtures (fixtures/node_modules)",
        "run `npm ci` in fixtures/",
    )
}

/// A program from the npm fixtures' `node_modules/.bin` (a real MCP server, say), or
/// [`missing`] and `None`.
pub fn npm_bin(name: &str) -> Option<PathBuf> {
    let bin = npm_fixtures()?.join(".bin").join(name);
    let found = bin.exists().then_some(bin);
    require(
        found,
        &format!("fixtures/node_modules/.bin/{name}"),
        "run `npm ci` in fixtures/",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_prerequisite_passes_through_whatever_ci_says() {
        assert_eq!(require(Some(3), "three", "count"), Some(3));
    }

    #[test]
    fn a_missing_prerequisite_fails_under_ci_and_skips_without_it() {
        let result = std::panic::catch_unwind(|| require::<u8>(None, "a thing", "get one"));
        match required() {
            true => {
                let panic = result.expect_err("CI is set: a missing prerequisite must fail");
                let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                assert!(text.contains("a thing is missing (get one)"), "{text}");
            }
            false => assert_eq!(result.ok(), Some(None)),
        }
    }

    #[test]
    fn the_fixtures_folder_is_the_repositorys() {
        assert!(fixtures_dir().join("package.json").is_file());
    }
}
