//! The fixture executions: their code, how this build records them, and what the test does
//! with each.

use super::{builder, Op, Step};
use crate::journal::{CrashPoint, CHILD_LEASE, CHILD_WALL_TIME};
use crate::probe::Probe;
use codemode::{ExecutionStatus, Runtime, SaveSnippet, Store};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// TypeScript (an interface, a type alias, a typed helper, `satisfies`, `as`, `!`) paused on
/// one approval after a read; approved, it logs a line and completes.
const APPROVAL_TS: &str = r#"interface Order {
  id: string;
  qty: number;
  price?: number;
}
type Total = { count: number; sum: number };
const total = (orders: Order[]): Total => ({
  count: orders.length,
  sum: orders.reduce((acc: number, o: Order) => acc + o.qty * (o.price ?? 1), 0),
});
async (): Promise<Total & { written: unknown; readSeq: number }> => {
  const orders: Order[] = [{ id: "a", qty: 2, price: 5 }, { id: "b", qty: 3 }];
  const t = total(orders);
  const seen = await probe.read({ sum: t.sum } satisfies { sum: number });
  const written = await probe.gated_write({ value: t.sum as number });
  console.log(`wrote ${t.sum} after reading seq ${seen.seq}`);
  return { ...t, written: written!.args.value, readSeq: seen.seq };
}"#;

/// TypeScript in a Markdown fence after prose, paused on one approval; approved, it throws,
/// and the error names the line of the model's text (fence and prose counted).
const FENCED_TS: &str = r#"The write goes first, then the check:

```ts
async () => {
  const limit: number = 1;
  const w = await probe.gated_write({ value: limit + 1 } as { value: number });
  if ((w.args.value as number) > limit) {
    throw new Error(`value ${w.args.value} exceeds the limit of ${limit}`);
  }
  return w.args.value;
}
```"#;

/// Plain JavaScript paused on a batch of three approvals started at once.
const BATCH_JS: &str = r#"async () => {
  const settled = await Promise.allSettled(
    ["red", "green", "blue"].map((value) => probe.gated_write({ value }))
  );
  return settled.map((s) => (s.status === "fulfilled" ? s.value.args.value : s.reason.message));
}"#;

/// Plain JavaScript (a function declaration) with a step, a read and an applied write before
/// it pauses: approval replays all three and runs only the approved write.
const APPLIED_THEN_PAUSED_JS: &str = r#"async function main() {
  const ticket = await codemode.step("ticket", () => ({ id: "T-" + (40 + 2), tags: ["a", "b"] }));
  const stock = await probe.read({ item: "bolt" });
  const applied = await probe.write({ value: ticket.id });
  console.info("applied at seq", applied.seq);
  const approved = await probe.gated_write({ value: stock.args.item });
  return {
    ticket,
    stockSeq: stock.seq,
    applied: [applied.seq, applied.args.value],
    approved: [approved.seq, approved.args.value],
  };
}"#;

/// A write applied, then a ledger write its node died inside (left `executing`), then a read.
const INTERRUPTED_JS: &str = r#"async () => {
  const first = await probe.write({ value: "before the crash" });
  const second = await ledger.write({ value: "during the crash" });
  const check = await probe.read({ after: second.key });
  return { first: first.args.value, second: second.written, key: second.key, check: check.seq };
}"#;

/// Revertible writes, one without a revert, and a read: completed, then rolled back.
const COMPLETED_WRITES_JS: &str = r#"async () => {
  const first = await probe.write({ value: "first" });
  const second = await probe.write({ value: "second" });
  const kept = await probe.write_norevert({ value: "kept" });
  const check = await probe.read({ after: kept.seq });
  return [first.seq, second.seq, kept.seq, check.seq];
}"#;

/// An applied write and a read, paused on an approval: rolled back while paused.
const PAUSED_ROLLBACK_JS: &str = r#"async () => {
  await probe.write({ value: "draft" });
  const seen = await probe.read({ draft: true });
  await probe.gated_write({ value: "publish" });
  return seen.seq;
}"#;

/// TypeScript taking an `input`, completed, then saved as the snippet [`SNIPPET_NAME`].
const SNIPPET_SOURCE_TS: &str = r#"async (input: { k: number } | undefined) => {
  const r = await probe.read({ k: input?.k ?? 0 });
  return (r.args.k as number) * 2;
}"#;

/// The name the snippet is saved under.
const SNIPPET_NAME: &str = "double-k";

/// Runs the saved snippet by name, with a good and a bad input.
const SNIPPET_RUN_JS: &str = r#"async () => {
  const doubled = await codemode.run("double-k", { k: 21 });
  const refused = await codemode.run("double-k", { k: "many" });
  return { doubled, refused: typeof refused.error };
}"#;

/// The execution left `running` by a node that died inside its ledger write.
pub const INTERRUPTED_ID: &str = "upgrade-interrupted";

/// The log of [`INTERRUPTED_ID`] as the dead node left it.
pub const INTERRUPTED_STATES: &[&str] = &["applied", "executing"];

/// The executions [`record`] makes, with the status each must have once recorded.
const RECORDED: &[(&str, &str, ExecutionStatus)] = &[
    ("upgrade-approval-ts", APPROVAL_TS, ExecutionStatus::Paused),
    ("upgrade-fenced-ts", FENCED_TS, ExecutionStatus::Paused),
    ("upgrade-batch", BATCH_JS, ExecutionStatus::Paused),
    (
        "upgrade-applied-then-paused",
        APPLIED_THEN_PAUSED_JS,
        ExecutionStatus::Paused,
    ),
    (
        "upgrade-completed-writes",
        COMPLETED_WRITES_JS,
        ExecutionStatus::Completed,
    ),
    (
        "upgrade-paused-rollback",
        PAUSED_ROLLBACK_JS,
        ExecutionStatus::Paused,
    ),
    (
        "upgrade-snippet-source",
        SNIPPET_SOURCE_TS,
        ExecutionStatus::Completed,
    ),
];

/// What the test does with the recorded executions, in order.
pub fn plan() -> Vec<Step> {
    let step = |execution: &str, op: Op| Step {
        execution: execution.into(),
        op,
        by: None,
        seqs: None,
        code: None,
    };
    vec![
        step("upgrade-approval-ts", Op::Approve),
        step("upgrade-fenced-ts", Op::Approve),
        // All of the batch: with the probe's calls one at a time, its results reach the
        // sandbox in seq order (a rejected sibling's error would race the approved results).
        Step {
            by: Some("alice".into()),
            ..step("upgrade-batch", Op::Approve)
        },
        step("upgrade-applied-then-paused", Op::Approve),
        step(INTERRUPTED_ID, Op::Resume),
        Step {
            by: Some("bob".into()),
            ..step("upgrade-completed-writes", Op::Rollback)
        },
        step("upgrade-paused-rollback", Op::Rollback),
        step("upgrade-snippet-source", Op::Inspect),
        Step {
            code: Some(SNIPPET_RUN_JS.into()),
            ..step("upgrade-snippet-run", Op::Call)
        },
    ]
}

/// Records every fixture execution but the interrupted one with `runtime` (a
/// [`super::fixture_runtime`] over an empty store) and saves the snippet; `Err` says which
/// did not end as planned.
pub async fn record(runtime: &Runtime) -> Result<(), String> {
    for (id, code, want) in RECORDED {
        let outcome = runtime
            .call_with_id(id, code)
            .await
            .map_err(|e| format!("{id}: {e}"))?;
        if outcome.status() != *want {
            return Err(format!("{id}: recorded {outcome:?}, want {want}"));
        }
    }
    let snippet = SaveSnippet {
        execution_id: "upgrade-snippet-source".into(),
        description: Some("Doubles k, read back through the probe.".into()),
        input_schema: Some(json!({
            "type": "object",
            "properties": { "k": { "type": "integer" } },
            "required": ["k"]
        })),
        force: false,
        replace: false,
    };
    runtime
        .save_snippet(SNIPPET_NAME, snippet)
        .await
        .map_err(|e| format!("saving the snippet: {e}"))?;
    Ok(())
}

/// Runs [`INTERRUPTED_ID`] on `store` as a node that dies (the process aborts) inside its
/// ledger write, after the write's `executing` mark is durable and before its effect. Never
/// returns `Ok`: an `Err` says how the run ended instead.
pub async fn record_interrupted(store: Arc<dyn Store>, journal: &Path) -> Result<(), String> {
    // A short pass deadline allows a short lease, which the recording program's own check
    // waits out before taking the run over.
    let options = codemode_quickjs::QuickJsOptions::default().with_wall_time(CHILD_WALL_TIME);
    let executor = Arc::new(codemode_quickjs::QuickJsExecutor::new(options));
    let runtime = builder(
        store,
        executor,
        &Probe::default(),
        journal,
        CrashPoint::BeforeEffect(1),
    )
    .lease(CHILD_LEASE)
    .build()
    .map_err(|e| format!("building the runtime: {e}"))?;
    let outcome = runtime
        .call_with_id(INTERRUPTED_ID, INTERRUPTED_JS)
        .await
        .map_err(|e| format!("{INTERRUPTED_ID}: {e}"))?;
    Err(format!(
        "{INTERRUPTED_ID} ended without the node dying: {outcome:?}"
    ))
}
