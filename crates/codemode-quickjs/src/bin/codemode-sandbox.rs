//! A sandbox process for `ProcessExecutor` (used by the crate's tests and benches).

fn main() {
    codemode_quickjs::run_worker()
}
