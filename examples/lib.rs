//! Runnable examples of the codemode library; see `README.md` beside this file.
//!
//! Run one with `cargo run -p codemode-examples --example NAME`, where NAME is `agent_host`,
//! `code_tool`, `rust_connector_revert`, `postgres` or `mount_server`. `cargo test -p codemode-examples`
//! runs them all.

/// The workspace README's Rust blocks, compiled as doctests (they use this package's
/// dev-dependencies: the runtime, the sandbox and the store).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct WorkspaceReadmeDoctests;

/// The examples README's Rust blocks, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("README.md")]
struct ExamplesReadmeDoctests;
