//! The web console in headless Chromium (Debian's `chromium`, driven by `playwright-core` from
//! `fixtures/`): the real binary on temporary databases, one server on loopback and one off
//! loopback behind a token. Screenshots of each view go to `target/console-screenshots/`.
//! Without Chromium or the fixtures this fails when `CI` is set and skips loudly otherwise.

mod common;

use common::{serve, BIN};
use std::path::{Path, PathBuf};
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

fn missing(what: &str) {
    codemode_testkit::missing(
        what,
        ".ci/run installs it: apt-get install -y chromium; npm ci in fixtures/",
    )
}

#[test]
fn console_in_headless_chromium() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    if !Path::new(CHROMIUM).exists() {
        return missing(CHROMIUM);
    }
    if !fixtures
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return missing("fixtures/node_modules/playwright-core");
    }
    if Command::new("node").arg("--version").output().is_err() {
        return missing("node");
    }
    let shots: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("console-screenshots");

    let open_dir = tempfile::tempdir().unwrap();
    let open = serve(open_dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let token = "console-s3cret";
    let locked_dir = tempfile::tempdir().unwrap();
    let locked = serve(
        locked_dir.path(),
        &["--listen", "0.0.0.0:0", "--token-env", "CM_CONSOLE_TOKEN"],
        &[("CM_CONSOLE_TOKEN", token)],
    );
    let port = locked.base.rsplit(':').next().unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console/console.test.mjs");
    let out = Command::new("node")
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg("--test-concurrency=1")
        .arg(&script)
        .arg(script.with_file_name("files.test.mjs"))
        .env("CONSOLE_URL", &open.base)
        .env("CONSOLE_TOKEN_URL", format!("http://127.0.0.1:{port}"))
        .env("CONSOLE_TOKEN", token)
        .env("CODEMODE_BIN", BIN)
        .env("FIXTURES", &fixtures)
        .env("SCREENSHOTS", &shots)
        .output()
        .expect("run node --test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "browser tests failed:\n{stdout}\n{stderr}"
    );
    eprintln!("screenshots: {}", shots.display());
}
