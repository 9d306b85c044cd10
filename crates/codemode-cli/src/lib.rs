//! The `codemode` binary's wiring: argument parsing, config loading, choosing the store, and
//! starting the fronts of `codemode-server`. A library only so that tests reach [`cli::Cli`].

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod app;
pub mod cli;
pub mod config;
mod openapi_cmd;
mod output;
mod progress;
mod serve;
