//! Runnable examples of the codemode library; see `README.md` beside this file.
//!
//! Run one with `cargo run -p codemode-examples --example NAME`, where NAME is `agent_host`,
//! `code_tool`, `rust_connector_revert` or `postgres`. `cargo test -p codemode-examples`
//! runs them all.
