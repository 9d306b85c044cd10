//! A paused outcome as an MCP tool result, within the result budget.
//!
//! What a model reads is the text content: clients that feed a model (Claude Code, Claude
//! Desktop, the AI SDK's MCP tools) pass it `content`, and the official TypeScript SDK client
//! hands both `content` and `structuredContent` to its caller as received (our tool declares
//! no output schema, so it checks neither). The two therefore carry different things: the text
//! says what waits (each action with its arguments cut short) and how a person approves it;
//! the structured content carries only the ids a program acts on (status, execution id, and
//! each action's seq, connector and method). The arguments in full are in the execution's
//! log (`codemode show`, `GET /api/executions/{id}`).

use codemode::PendingAction;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

/// The most characters of one action's arguments the text shows.
const MAX_SHOWN_ARGS_CHARS: usize = 300;

/// Characters the text keeps for its fixed parts (the heading, the batch note, the hint).
const FIXED_TEXT_CHARS: usize = 1_200;

/// The tool result of a pause of `execution_id` on `pending`, within `budget_chars`;
/// `hint` says how a person approves, `max_batch` is the most actions one pause proposes.
pub(crate) fn paused_result(
    execution_id: &str,
    pending: &[PendingAction],
    hint: &str,
    max_batch: usize,
    budget_chars: usize,
) -> CallToolResult {
    let ids: Vec<Value> = pending
        .iter()
        .map(|p| json!({"seq": p.seq, "connector": p.connector, "method": p.method}))
        .collect();
    let structured = json!({"status": "paused", "executionId": execution_id, "pending": ids});
    let room = budget_chars
        .saturating_sub(structured.to_string().chars().count())
        .saturating_sub(FIXED_TEXT_CHARS);
    let mut text = match pending.len() {
        1 => format!("Paused: execution {execution_id} waits for a person to approve 1 action:"),
        n => format!("Paused: execution {execution_id} waits for a person to approve {n} actions:"),
    };
    text.push_str(&actions(pending, room));
    if pending.len() >= max_batch {
        text.push_str(&format!(
            "\n\nThese are one batch (at most {max_batch} actions are proposed at a time, in the order the code made them). Actions the code started after them wait, and are proposed once these are decided."
        ));
    }
    text.push_str("\n\n");
    text.push_str(hint);
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// One line per action, `seq N connector.method(args)`, its arguments cut to their share
/// of `room`; the actions past `room` are counted.
fn actions(pending: &[PendingAction], room: usize) -> String {
    let share = (room / pending.len().max(1)).min(MAX_SHOWN_ARGS_CHARS + 60);
    let mut out = String::new();
    let mut used = 0;
    for (shown, p) in pending.iter().enumerate() {
        let name = format!("\n- seq {} {}.{}", p.seq, p.connector, p.method);
        let args_room = share.saturating_sub(name.chars().count() + 2);
        let line = match args_room {
            0..=15 => name,
            n => format!("{name}({})", cut(&p.args.to_string(), n)),
        };
        let len = line.chars().count();
        if used + len > room {
            out.push_str(&format!("\n- … and {} more", pending.len() - shown));
            break;
        }
        used += len;
        out.push_str(&line);
    }
    out
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > max => format!("{}…", &text[..at]),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(seq: u64, args: Value) -> PendingAction {
        PendingAction {
            execution_id: "e1".into(),
            seq,
            connector: "tasks".into(),
            method: "create_task".into(),
            args,
        }
    }

    #[test]
    fn a_pause_fits_its_budget_and_says_its_batch() {
        let long = "x".repeat(5_000);
        let cases: &[(usize, usize, usize)] = &[
            // (actions, max_batch, budget in characters)
            (1, 25, 24_000),
            (25, 25, 24_000),
            (100, 100, 24_000),
            (25, 25, 2_000),
        ];
        for &(n, max_batch, budget) in cases {
            let pending: Vec<_> = (0..n as u64)
                .map(|s| action(s, json!({"title": format!("t{s}"), "notes": long})))
                .collect();
            let r = paused_result("e1", &pending, "Tell the user.", max_batch, budget);
            let size = serde_json::to_string(&r).unwrap().chars().count();
            assert!(
                size <= budget.max(FIXED_TEXT_CHARS * 2 + n * 60),
                "{n}/{budget}: {size}"
            );
            let text = r.content[0].as_text().unwrap().text.clone();
            // A budget too small for the list counts the actions instead (the ids stay in
            // the structured content).
            let listed = text.contains("seq 0 tasks.create_task");
            assert_eq!(listed, budget >= 24_000, "{text}");
            assert_eq!(
                text.contains("These are one batch"),
                n >= max_batch,
                "{text}"
            );
            let s = r.structured_content.unwrap();
            assert_eq!(s["pending"].as_array().unwrap().len(), n);
            assert!(
                s.to_string().len() < 60 * n + 100,
                "no arguments in the structured copy"
            );
        }
    }

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("ééééé", 3), "éé…");
    }
}
