//! Sandbox benchmarks (filled in below).

fn main() {}
