//! A sandbox process whose parent goes away ends, even while its pass is stuck in a built-in
//! (its parent would have killed it at the deadline). The frames are written by hand here.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn write_frame(input: &mut impl Write, frame: Value) {
    let body = frame.to_string();
    input.write_all(&(body.len() as u32).to_le_bytes()).unwrap();
    input.write_all(body.as_bytes()).unwrap();
    input.flush().unwrap();
}

fn read_frame(output: &mut impl Read) -> Value {
    let mut len = [0u8; 4];
    output.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    output.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn a_process_whose_parent_closes_its_output_ends_during_a_stuck_pass() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode-sandbox"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = child.stdout.take().unwrap();
    let limits = json!({"Init": {
        "wall_time_ms": 600_000,
        "memory_limit": 64 << 20,
        "max_stack_size": 512 << 10,
        "max_console_bytes": 1 << 20,
        "max_code_bytes": 1 << 20,
    }});
    write_frame(&mut input, limits);
    assert!(read_frame(&mut output).get("Ready").is_some());
    // Stuck in C: a `length` of 2**53 - 1 after the first read.
    let code = "async () => { let n = 0; const o = { get length() { return n++ === 0 ? 0 : 2**53 - 1; } }; Array.prototype.reverse.call(o); }";
    write_frame(
        &mut input,
        json!({"Pass": {"code": code, "namespaces": []}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "the pass is running");
    drop(output);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(20) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
