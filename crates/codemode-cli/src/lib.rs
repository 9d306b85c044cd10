//! The `codemode` binary's wiring: argument parsing, config loading, choosing the store, and
//! starting the fronts of `codemode-server`. A library only so that tests reach [`cli::Cli`].

// The arguments' doc comments are the `--help` text (`NAME=SPEC[@BASE_URL]`), not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links)]

pub mod app;
pub mod cli;
pub mod config;
mod openapi_cmd;
mod serve;
