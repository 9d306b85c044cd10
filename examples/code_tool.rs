//! A stateless code tool: sandboxed code over your tools, with no store and no approvals.
//!
//! `CodeTool` is for hosts that only want the model to write code against their tools: the
//! same sandbox, typed globals, tool description and `codemode.search` / `describe` as the
//! durable `Runtime`, but nothing is logged, replayed or paused. A tool that would need a
//! person's approval is left out when the code tool is built, and `warnings()` says so.
//!
//! Run it with `cargo run -p codemode-examples --example code_tool`.

use codemode::{CodeOutcome, CodeTool, RustConnector, RustTool};
use codemode_quickjs::QuickJsExecutor;
use serde_json::{json, Value};
use std::error::Error;
use std::sync::Arc;

/// A `units` connector: two read-only conversions.
fn units_connector() -> RustConnector {
    let number_schema = |field: &str| {
        json!({
            "type": "object",
            "properties": { field: { "type": "number" } },
            "required": [field],
            "additionalProperties": false
        })
    };
    RustConnector::new("units")
        .tool(
            RustTool::new("celsius_to_fahrenheit", |args: Value, _ctx| async move {
                let c = args["celsius"].as_f64().unwrap_or_default();
                Ok(json!(c * 9.0 / 5.0 + 32.0))
            })
            .description("Converts a temperature from Celsius to Fahrenheit.")
            .input_schema(number_schema("celsius"))
            .read_only(),
        )
        .tool(
            RustTool::new("km_to_miles", |args: Value, _ctx| async move {
                Ok(json!(args["km"].as_f64().unwrap_or_default() / 1.609_344))
            })
            .description("Converts a distance from kilometres to miles.")
            .input_schema(number_schema("km"))
            .read_only(),
        )
}

/// What the example shows: a result with logs, a discovery run, a bad argument, a tool left
/// out (the warning, and what the code meets when it calls it anyway).
struct Shown {
    converted: CodeOutcome,
    discovered: CodeOutcome,
    bad_argument: CodeOutcome,
    left_out: Vec<String>,
    called_anyway: CodeOutcome,
}

async fn run() -> Result<Shown, Box<dyn Error>> {
    let executor = Arc::new(QuickJsExecutor::default());
    let tool = CodeTool::builder(executor.clone())
        .connector(units_connector())
        .build()?;

    // `tool.tool()` is the definition to hand the model; here the model's code is fixed.
    let converted = tool
        .call(
            r#"async () => {
                const f = await units.celsius_to_fahrenheit({ celsius: 21 });
                console.log(`21 °C is ${f} °F`);
                return Math.round(await units.km_to_miles({ km: 42.195 }) * 100) / 100;
            }"#,
        )
        .await;
    let discovered = tool
        .call(
            r#"async () => {
                const found = await codemode.search("miles");
                return (await codemode.describe(found.results[0].path)).types;
            }"#,
        )
        .await;
    let bad_argument = tool
        .call(r#"async () => units.km_to_miles({ km: "ten" })"#)
        .await;

    // A tool with no policy that is not read-only needs approval, so it is left out here.
    let mail = RustConnector::new("mail").tool(RustTool::new("send", |_args, _ctx| async {
        Ok(json!({ "sent": true }))
    }));
    let with_mail = CodeTool::builder(executor)
        .connector(units_connector())
        .connector(mail)
        .build()?;
    let called_anyway = with_mail
        .call(r#"async () => mail.send({ to: "bob" })"#)
        .await;
    Ok(Shown {
        converted,
        discovered,
        bad_argument,
        left_out: with_mail.warnings(),
        called_anyway,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let shown = run().await?;
    println!("Conversion:\n{:#}\n", json!(shown.converted));
    println!("Discovery:\n{:#}\n", json!(shown.discovered));
    println!("A bad argument:\n{:#}\n", json!(shown.bad_argument));
    println!(
        "An approval tool is left out:\n{}",
        shown.left_out.join("\n")
    );
    println!("Calling it anyway:\n{:#}", json!(shown.called_anyway));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_code_tool_runs_discovers_validates_and_leaves_out_approval_tools() {
        let shown = run().await.unwrap();
        assert_eq!(
            shown.converted,
            CodeOutcome::Completed {
                result: json!(26.22),
                logs: vec!["21 °C is 69.8 °F".into()],
            }
        );
        let CodeOutcome::Completed { result, .. } = shown.discovered else {
            panic!("discovery failed: {:?}", shown.discovered);
        };
        assert!(result.as_str().unwrap().contains("km_to_miles"), "{result}");
        let CodeOutcome::Error { error, .. } = shown.bad_argument else {
            panic!("a bad argument passed: {:?}", shown.bad_argument);
        };
        assert!(
            error.contains("units.km_to_miles: invalid input"),
            "{error}"
        );
        assert_eq!(shown.left_out.len(), 1, "{:?}", shown.left_out);
        assert!(
            shown.left_out[0].contains("`send` left out of the code tool: it requires approval"),
            "{:?}",
            shown.left_out
        );
        let CodeOutcome::Error { error, .. } = shown.called_anyway else {
            panic!("a left-out tool ran: {:?}", shown.called_anyway);
        };
        assert!(error.contains("send"), "{error}");
    }
}
