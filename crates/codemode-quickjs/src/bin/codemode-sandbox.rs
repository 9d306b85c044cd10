//! A sandbox process for `ProcessExecutor`, used by the crate's tests and benches.
//!
//! With no argument it is the real worker. `misbehave=garbage|huge|die` makes a process that
//! answers the start-up handshake and then breaks the protocol at its first pass (a frame
//! that is not JSON, a frame longer than any accepted, or death by a signal), so that tests
//! can check the parent's side.

use std::io::{self, Read, Write};

fn read_frame(input: &mut impl Read) -> Option<serde_json::Value> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn write_raw(out: &mut impl Write, len: u32, body: &[u8]) {
    let _ = out.write_all(&len.to_le_bytes());
    let _ = out.write_all(body);
    let _ = out.flush();
}

fn write_frame(out: &mut impl Write, value: serde_json::Value) {
    let body = value.to_string();
    write_raw(out, body.len() as u32, body.as_bytes());
}

fn misbehave(how: &str) -> ! {
    let mut input = io::stdin().lock();
    let mut out = io::stdout().lock();
    let eperm = 1;
    while let Some(frame) = read_frame(&mut input) {
        if frame.get("Init").is_some() {
            let ready = serde_json::json!({"Ready": {"baseline_vsz": 0, "address_limit": 0}});
            write_frame(&mut out, ready);
        } else if frame == serde_json::json!("Probe") {
            let probed =
                serde_json::json!({"Probed": {"socket": eperm, "open": eperm, "fork": eperm}});
            write_frame(&mut out, probed);
        } else if frame.get("Pass").is_some() {
            match how {
                "garbage" => write_raw(&mut out, 9, b"not json!"),
                "huge" => write_raw(&mut out, u32::MAX, b"{"),
                _ => std::process::abort(),
            }
        }
    }
    std::process::exit(0)
}

fn main() {
    match std::env::args()
        .nth(1)
        .as_deref()
        .and_then(|a| a.strip_prefix("misbehave="))
    {
        Some(how) => misbehave(how),
        None => codemode_quickjs::run_worker(),
    }
}
