//! What the terminal is shown: human-readable text (or one JSON document) of outcomes,
//! executions and their timelines, pending actions, rollback reports, snippets and search
//! results.

use codemode::{
    EntryState, Execution, ExecutionSummary, Outcome, PendingAction, RollbackReport, Snippet,
};
use serde::Serialize;
use serde_json::Value;

/// Prints either JSON (one document) or text.
pub struct Printer {
    /// JSON instead of text.
    pub json: bool,
    /// How to run this binary again on the same store or server, for the hints in the text.
    pub again: String,
}

/// Writes `text` and a newline to stdout. When the reader has gone away (`codemode types |
/// head`), the process ends quietly with status 0, as a filter's producer should; any other
/// write error ends it with status 1 and says why on stderr.
pub fn line(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `s` as one shell word: bare when it is plain, else in single quotes.
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c);
    match !s.is_empty() && s.chars().all(plain) {
        true => s.to_string(),
        false => format!("'{}'", s.replace('\'', "'\\''")),
    }
}

/// Pretty JSON for human output.
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

fn time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    let days = secs.div_euclid(86_400);
    let (y, mo, d) = civil(days);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02}Z")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn state(s: EntryState) -> &'static str {
    match s {
        EntryState::Executing => "executing",
        EntryState::Applied => "applied",
        EntryState::Pending => "PENDING",
        EntryState::Reverted => "reverted",
        EntryState::Error => "error",
    }
}

fn short(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max {
        s
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

impl Printer {
    fn emit<T: Serialize>(&self, v: &T, text: impl FnOnce() -> String) {
        if self.json {
            line(
                &serde_json::to_string_pretty(v)
                    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
            );
        } else {
            line(&text());
        }
    }

    /// A value with its text form.
    pub fn value(&self, v: &Value, text: &str) {
        self.emit(v, || text.to_string());
    }

    /// The outcome of `run` or `approve`.
    pub fn outcome(&self, o: &Outcome) {
        self.emit(o, || match o {
            Outcome::Completed {
                execution_id,
                result,
                logs,
            } => {
                let mut s = String::new();
                for l in logs {
                    s.push_str(&format!("log: {l}\n"));
                }
                s.push_str(&format!("completed {execution_id}\n{}", pretty(result)));
                s
            }
            Outcome::Paused {
                execution_id,
                pending,
            } => {
                let mut s = format!("paused {execution_id}: waiting for approval of\n");
                for p in pending {
                    s.push_str(&format!(
                        "  [{}] {}.{}({})\n",
                        p.seq,
                        p.connector,
                        p.method,
                        short(&p.args, 200)
                    ));
                }
                s.push_str(&format!(
                    "approve: {again} approve {execution_id}\nreject:  {again} reject {execution_id} {}",
                    pending.first().map(|p| p.seq).unwrap_or(0),
                    again = self.again,
                ));
                s
            }
            Outcome::Error {
                execution_id,
                error,
                logs,
                ..
            } => {
                let mut s = String::new();
                for l in logs {
                    s.push_str(&format!("log: {l}\n"));
                }
                s.push_str(&format!("error {execution_id}: {error}"));
                s
            }
        });
    }

    /// Pending actions.
    pub fn pending(&self, list: &[PendingAction]) {
        self.emit(&list, || {
            if list.is_empty() {
                return "nothing waits for approval".into();
            }
            list.iter()
                .map(|p| {
                    format!(
                        "{}  [{}] {}.{}({})",
                        p.execution_id,
                        p.seq,
                        p.connector,
                        p.method,
                        short(&p.args, 120)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
    }

    /// Executions, newest first.
    pub fn executions(&self, list: &[ExecutionSummary]) {
        self.emit(&list, || {
            if list.is_empty() {
                return "no executions yet".into();
            }
            list.iter()
                .map(|e| {
                    let first = e.code.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    let first: String = first.trim().chars().take(60).collect();
                    format!(
                        "{}  {:<11} {}  {} call(s)  {}",
                        e.id,
                        e.status.to_string(),
                        time(e.created_at),
                        e.entries,
                        first
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
    }

    /// One execution with its log as a timeline.
    pub fn execution(&self, e: &Execution) {
        self.emit(e, || {
            let mut s = format!(
                "execution {}\nstatus:  {}\ncreated: {}\nupdated: {}\nconnectors: {}\n\ncode:\n",
                e.id,
                e.status,
                time(e.created_at),
                time(e.updated_at),
                e.connectors.join(", ")
            );
            for l in e.code.lines() {
                s.push_str(&format!("  | {l}\n"));
            }
            s.push_str("\ntimeline:\n");
            if e.log.is_empty() {
                s.push_str("  (no calls)\n");
            }
            for entry in &e.log {
                let approval = if entry.requires_approval {
                    " (approval)"
                } else {
                    ""
                };
                s.push_str(&format!(
                    "  #{:<3} {:<9} {}.{}({}){approval}\n",
                    entry.seq,
                    state(entry.state),
                    entry.connector,
                    entry.method,
                    short(&entry.args, 120)
                ));
                if let Some(r) = &entry.result {
                    s.push_str(&format!("        → {}\n", short(r, 160)));
                }
                if let Some(err) = &entry.error {
                    s.push_str(&format!("        ✗ {err}\n"));
                }
            }
            if let Some(r) = &e.result {
                s.push_str(&format!("\nresult: {}\n", pretty(r)));
            }
            if let Some(err) = &e.error {
                s.push_str(&format!("\nerror: {err}\n"));
            }
            for l in &e.logs {
                s.push_str(&format!("log: {l}\n"));
            }
            s.trim_end().to_string()
        });
    }

    /// A rollback report.
    pub fn rollback(&self, r: &RollbackReport) {
        self.emit(r, || {
            let mut s = format!(
                "rollback of {}: now {}\nreverted: {:?}\nskipped (no revert): {:?}",
                r.execution_id, r.status, r.reverted, r.skipped
            );
            for f in &r.failed {
                s.push_str(&format!("\nfailed #{} {}: {}", f.seq, f.path, f.error));
            }
            s
        });
    }

    /// Snippets.
    pub fn snippets(&self, list: &[Snippet]) {
        self.emit(&list, || {
            if list.is_empty() {
                return "no snippets; save one with codemode snippet save NAME --from ID".into();
            }
            list.iter()
                .map(|s| format!("{}  {}", s.name, s.description))
                .collect::<Vec<_>>()
                .join("\n")
        });
    }
}

/// A program that works on `runtime`'s connectors, for a start banner: the demo's
/// `tasks.create_task` when the demo is loaded, else a read-only method that needs no
/// arguments, else a search for the first connector's methods.
pub fn example_code(runtime: &codemode::Runtime) -> String {
    let connectors = runtime.connectors();
    if connectors.iter().any(|c| c.name == "tasks") {
        return "return await tasks.create_task({ title: \"try codemode\" })".into();
    }
    let no_input = |schema: &Value| schema["required"].as_array().is_none_or(|r| r.is_empty());
    let read = connectors.iter().find_map(|c| {
        let t = c
            .tools
            .iter()
            .find(|t| t.read_only && no_input(&t.input_schema))?;
        Some(format!("return await {}.{}({{}})", c.name, t.name))
    });
    let first = connectors.first().map_or("", |c| c.name.as_str());
    read.unwrap_or_else(|| format!("return await codemode.search({first:?})"))
}

/// Search results (the JSON of `codemode.search`) as a table: path, first sentence, and
/// whether a call needs approval; then how many matched.
pub fn search_text(v: &Value) -> String {
    let results = v["results"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let width = results
        .iter()
        .filter_map(|r| r["path"].as_str())
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for r in results {
        let path = r["path"].as_str().unwrap_or_default();
        let mut line = format!("{path:<width$}");
        if let Some(description) = r["description"].as_str().filter(|d| !d.is_empty()) {
            line.push_str("  ");
            line.push_str(description);
        }
        if r["kind"] == "snippet" {
            line.push_str("  (snippet)");
        }
        if r["requiresApproval"] == true {
            line.push_str("  (needs approval)");
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let total = v["total"].as_u64().unwrap_or(results.len() as u64);
    if results.is_empty() {
        text.push_str(v["note"].as_str().unwrap_or("nothing matched"));
    } else if v["truncated"] == true {
        text.push_str(&format!(
            "{} of {total} matches shown; narrow the query to see the rest",
            results.len()
        ));
    } else {
        text.push_str(&format!("{total} match(es)"));
    }
    if let Some(note) = v["note"].as_str().filter(|_| !results.is_empty()) {
        text.push_str(&format!("\n{note}"));
    }
    text.push_str("\n`codemode describe PATH` shows a method's types");
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn search_results_read_as_a_table() {
        let v = json!({
            "results": [
                {"path": "tasks.create_task", "description": "Creates a task.", "kind": "method",
                 "requiresApproval": true},
                {"path": "ev.echo", "description": "Echoes back the input string", "kind": "method",
                 "requiresApproval": false},
                {"path": "weekly_report", "kind": "snippet", "requiresApproval": false}
            ],
            "total": 7,
            "truncated": true
        });
        let text = super::search_text(&v);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "tasks.create_task  Creates a task.  (needs approval)"
        );
        assert_eq!(lines[1], "ev.echo            Echoes back the input string");
        assert_eq!(lines[2], "weekly_report      (snippet)");
        assert!(lines[3].starts_with("3 of 7 matches shown"), "{text}");
        let none = super::search_text(&json!({"results": [], "total": 0, "truncated": false,
            "note": "no connector has a method like that"}));
        assert!(
            none.starts_with("no connector has a method like that\n"),
            "{none}"
        );
    }

    #[test]
    fn civil_dates() {
        assert_eq!(super::civil(0), (1970, 1, 1));
        assert_eq!(super::time(1_700_000_000_000), "2023-11-14 22:13:20Z");
    }
}
