//! The conformance suite of the Code Mode runtime.
//!
//! A scenario file (TOML, under `scenarios/`) is code plus a scripted sequence of
//! operations (call, approve, reject, rollback, expire, prune, delete, save and run
//! snippets) with the outcome each must have, and the log states and connector-side
//! effects expected at the end. [`run_scenario`] runs one against any [`Store`], with the
//! real QuickJS sandbox, so the same suite holds every store to the same semantics.

pub mod journal;
pub mod probe;
pub mod scenario;

pub use probe::{Probe, ProbeRecord};
pub use scenario::{load_scenarios, run_all, run_scenario, Scenario};
