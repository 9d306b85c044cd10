//! `probe`: a connector whose tools record what really ran, for asserting side effects.

use codemode::{RustConnector, RustTool, ToolError};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What the probe saw: runs per method, reverts in order, hooks, idempotency keys.
#[derive(Debug, Default, Clone)]
pub struct ProbeRecord {
    /// How many times each method really ran.
    pub runs: BTreeMap<String, u64>,
    /// Reverts in the order they ran, as `method#seq`.
    pub reverts: Vec<String>,
    /// `on_pass_end` calls as `status`.
    pub pass_ends: Vec<String>,
    /// `dispose_execution` calls as `status`.
    pub disposals: Vec<String>,
    /// Idempotency keys of every real run, in order, as `method@key`.
    pub keys: Vec<String>,
}

/// A shared handle on the probe's record.
#[derive(Debug, Default, Clone)]
pub struct Probe {
    record: Arc<Mutex<ProbeRecord>>,
}

impl Probe {
    /// A copy of what was recorded so far.
    pub fn record(&self) -> ProbeRecord {
        self.record.lock().unwrap().clone()
    }

    fn ran(&self, method: &str, key: String) -> u64 {
        let mut r = self.record.lock().unwrap();
        r.keys.push(format!("{method}@{key}"));
        let n = r.runs.entry(method.to_string()).or_default();
        *n += 1;
        *n
    }

    /// The connector named `name`, wired to this probe.
    pub fn connector(&self, name: &str) -> RustConnector {
        let p = self.clone();
        let tool = |method: &'static str| {
            let p = p.clone();
            move |args: Value, ctx: codemode::CallContext| {
                let p = p.clone();
                async move {
                    let n = p.ran(method, ctx.idempotency_key());
                    Ok::<Value, ToolError>(
                        json!({ "method": method, "n": n, "args": args, "seq": ctx.seq }),
                    )
                }
            }
        };
        let revert = |method: &'static str, fail: bool| {
            let p = p.clone();
            move |_args: Value, _result: Value, ctx: codemode::CallContext| {
                let p = p.clone();
                async move {
                    if fail {
                        return Err(ToolError::new(format!("{method} revert failed on purpose")));
                    }
                    p.record
                        .lock()
                        .unwrap()
                        .reverts
                        .push(format!("{method}#{}", ctx.seq));
                    Ok(())
                }
            }
        };
        let value_schema = json!({
            "type": "object",
            "properties": { "value": {} },
            "additionalProperties": false
        });
        let pe = p.clone();
        let dp = p.clone();
        RustConnector::new(name)
            .instructions("A probe that records every call.")
            .tool(
                RustTool::new("read", tool("read"))
                    .description("Reads a value; changes nothing.")
                    .read_only(),
            )
            .tool(
                RustTool::new("write", tool("write"))
                    .description("Writes a value without approval; revertible.")
                    .input_schema(value_schema.clone())
                    .requires_approval(false)
                    .revert(revert("write", false)),
            )
            .tool(
                RustTool::new("gated_write", tool("gated_write"))
                    .description("Writes a value after approval; revertible.")
                    .input_schema(value_schema.clone())
                    .revert(revert("gated_write", false)),
            )
            .tool(
                RustTool::new("gated_plain", tool("gated_plain"))
                    .description("Writes a value after approval; no revert.")
                    .input_schema(value_schema.clone()),
            )
            .tool(
                RustTool::new("write_norevert", tool("write_norevert"))
                    .description("Writes without approval; no revert.")
                    .requires_approval(false),
            )
            .tool(
                RustTool::new("write_badrevert", tool("write_badrevert"))
                    .description("Writes without approval; its revert fails.")
                    .requires_approval(false)
                    .revert(revert("write_badrevert", true)),
            )
            .tool(
                RustTool::new("write_crash", {
                    let p = p.clone();
                    move |_args: Value, ctx: codemode::CallContext| {
                        let p = p.clone();
                        async move {
                            p.ran("write_crash", ctx.idempotency_key());
                            panic!("write_crash dies after its effect, as a crashing node would")
                        }
                    }
                })
                .description(
                    "Writes, then dies before returning (its outcome is unknown); revertible.",
                )
                .requires_approval(false)
                .revert(revert("write_crash", false)),
            )
            .tool(
                RustTool::new("write_crash_norevert", {
                    let p = p.clone();
                    move |_args: Value, ctx: codemode::CallContext| {
                        let p = p.clone();
                        async move {
                            p.ran("write_crash_norevert", ctx.idempotency_key());
                            panic!("write_crash_norevert dies after its effect")
                        }
                    }
                })
                .description("Writes, then dies before returning; no revert.")
                .requires_approval(false),
            )
            .tool(
                RustTool::new("slow", {
                    let p = p.clone();
                    move |args: Value, ctx: codemode::CallContext| {
                        let p = p.clone();
                        async move {
                            p.ran("slow", ctx.idempotency_key());
                            let ms = args["ms"].as_u64().unwrap_or(10);
                            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                            Ok::<Value, ToolError>(json!(ms))
                        }
                    }
                })
                .description("Reads after `ms` milliseconds (default 10); changes nothing.")
                .read_only(),
            )
            .tool(
                RustTool::new("fresh", tool("fresh"))
                    .description("Reads a fresh value on every pass.")
                    .read_only()
                    .reexecute(),
            )
            .tool(
                RustTool::new("fail", {
                    let p = p.clone();
                    move |args: Value, ctx: codemode::CallContext| {
                        let p = p.clone();
                        async move {
                            p.ran("fail", ctx.idempotency_key());
                            let msg = args["message"].as_str().unwrap_or("failed").to_string();
                            Err::<Value, _>(ToolError::new(msg))
                        }
                    }
                })
                .description("Always fails with the given message.")
                .read_only(),
            )
            .tool(
                RustTool::new("big", {
                    let p = p.clone();
                    move |args: Value, ctx: codemode::CallContext| {
                        let p = p.clone();
                        async move {
                            p.ran("big", ctx.idempotency_key());
                            let size = args["size"].as_u64().unwrap_or(0) as usize;
                            Ok::<Value, ToolError>(Value::String("x".repeat(size)))
                        }
                    }
                })
                .description("Returns a string of `size` characters.")
                .input_schema(json!({
                    "type": "object",
                    "properties": { "size": { "type": "integer", "minimum": 0 } },
                    "required": ["size"]
                }))
                .read_only(),
            )
            .on_pass_end(move |_id, status| {
                let p = pe.clone();
                async move {
                    p.record
                        .lock()
                        .unwrap()
                        .pass_ends
                        .push(status.as_str().to_string());
                    Ok(())
                }
            })
            .on_dispose(move |_id, status| {
                let p = dp.clone();
                async move {
                    p.record
                        .lock()
                        .unwrap()
                        .disposals
                        .push(status.as_str().to_string());
                    Ok(())
                }
            })
    }
}
