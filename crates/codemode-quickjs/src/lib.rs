//! The Code Mode sandbox: a [`codemode::Executor`] on QuickJS-ng.
//!
//! [`QuickJsExecutor`] runs each pass in a fresh QuickJS runtime on a sandbox thread of its
//! own. The model's code is first normalised ([`normalize()`]): fences, bare statements,
//! function forms and TypeScript all become one async function. Each connector namespace is
//! a global whose methods become [`codemode::HostCall`]s; `codemode` is the SDK; `console` is
//! captured. Values cross the boundary as JSON, with an envelope for BigInt and bytes (see
//! [`values`]). See the crate README for the limits.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[allow(unsafe_code)]
mod arena;
mod caller;
mod clock;
mod compiled;
pub mod error;
mod executor;
pub mod fences;
#[allow(unsafe_code)]
mod ffi;
mod fresh;
pub mod globals;
mod memory;
pub mod normalize;
mod options;
mod pass;
mod pool;
mod report;
#[allow(unsafe_code)]
mod slot;
mod snippet_chain;
mod stack;
mod turns;
pub mod values;
pub mod worker;

pub use error::{NamespaceError, NormalizeError};
pub use executor::QuickJsExecutor;
pub use globals::{check_namespaces, RESERVED_GLOBALS};
pub use normalize::{normalize, Normalized};
pub use options::QuickJsOptions;
pub use worker::{
    run_worker, ProbeReport, ProcessExecutor, ProcessOptions, SandboxStartError, WorkerCommand,
};
