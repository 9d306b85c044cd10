//! Bounding what the model receives: structural truncation of JSON values and outcomes.
//!
//! A value over budget keeps its shape: arrays keep their first items and end with a string
//! saying how many were left out, objects keep their first keys (an extra `"…"` key counts the
//! rest), long strings are cut with a count, and containers below a depth become a one-line
//! summary string. Limits tighten level by level until the compact JSON fits the budget.

use super::{js_len, serialized_len};
use crate::model::Outcome;
use serde_json::{Map, Value};

/// Default token budget of one answer to the model (the reference's default).
pub const DEFAULT_MAX_RESULT_TOKENS: usize = 6_000;
/// Characters per token used to turn a token budget into characters.
pub const CHARS_PER_TOKEN: usize = 4;
/// Smallest budget honoured, in characters; smaller ones are raised to it.
pub const MIN_BUDGET_CHARS: usize = 200;
/// Largest budget honoured, in characters (the durable value limit); larger ones are lowered.
pub const MAX_BUDGET_CHARS: usize = super::MAX_DURABLE_VALUE_CHARS;

/// Options for [`truncate_result`], [`truncate_value`], [`truncate_outcome`] and [`truncate_text`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TruncateOptions {
    /// A character budget; overrides `max_tokens`.
    pub max_chars: Option<usize>,
    /// A token budget at four characters a token (default 6,000).
    pub max_tokens: Option<usize>,
}

impl TruncateOptions {
    /// A budget of `tokens` tokens.
    pub fn tokens(tokens: usize) -> Self {
        TruncateOptions {
            max_chars: None,
            max_tokens: Some(tokens),
        }
    }

    /// The budget in characters, clamped to `MIN_BUDGET_CHARS..=MAX_BUDGET_CHARS`
    /// (50 to 250,000 tokens): a budget of 0 becomes 200 characters, a huge one 1,000,000.
    pub fn budget_chars(&self) -> usize {
        let chars = self.max_chars.unwrap_or_else(|| {
            self.max_tokens
                .unwrap_or(DEFAULT_MAX_RESULT_TOKENS)
                .saturating_mul(CHARS_PER_TOKEN)
        });
        chars.clamp(MIN_BUDGET_CHARS, MAX_BUDGET_CHARS)
    }
}

/// Limits of one truncation level.
#[derive(Debug, Clone, Copy)]
struct Limits {
    depth: usize,
    items: usize,
    keys: usize,
    string: usize,
}

/// Levels tried in order until the value fits; the last summarises the whole value.
const LEVELS: &[Limits] = &[
    Limits {
        depth: 64,
        items: 400,
        keys: 400,
        string: 8_000,
    },
    Limits {
        depth: 32,
        items: 200,
        keys: 200,
        string: 4_000,
    },
    Limits {
        depth: 16,
        items: 100,
        keys: 100,
        string: 2_000,
    },
    Limits {
        depth: 12,
        items: 50,
        keys: 60,
        string: 1_000,
    },
    Limits {
        depth: 8,
        items: 25,
        keys: 40,
        string: 500,
    },
    Limits {
        depth: 6,
        items: 10,
        keys: 25,
        string: 200,
    },
    Limits {
        depth: 4,
        items: 5,
        keys: 15,
        string: 100,
    },
    Limits {
        depth: 3,
        items: 3,
        keys: 10,
        string: 60,
    },
    Limits {
        depth: 2,
        items: 2,
        keys: 6,
        string: 40,
    },
    Limits {
        depth: 1,
        items: 1,
        keys: 3,
        string: 24,
    },
    Limits {
        depth: 0,
        items: 0,
        keys: 0,
        string: 16,
    },
];

/// The key that counts an object's keys left out.
const MORE_KEYS: &str = "…";

/// A value cut to a budget, and what was cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Truncated {
    /// The value, of the same shape as the input, within the budget.
    pub value: Value,
    /// What was cut and how to ask for less; `None` when the value fitted whole.
    pub note: Option<String>,
    /// The size of the input's compact JSON, in characters.
    pub original_chars: usize,
    /// The size of `value`'s compact JSON, in characters.
    pub kept_chars: usize,
}

/// Leaves a value that fits the budget alone; otherwise cuts it structurally (see the module
/// documentation), so the result is valid JSON of the same shape within the budget.
pub fn truncate_result(value: Value, options: TruncateOptions) -> Value {
    truncate_value(value, options).value
}

/// [`truncate_result`] with a note for the model saying what was cut and how to ask for less.
pub fn truncate_value(value: Value, options: TruncateOptions) -> Truncated {
    let budget = options.budget_chars();
    let original_chars = serialized_len(&value);
    if original_chars <= budget {
        return Truncated {
            value,
            note: None,
            original_chars,
            kept_chars: original_chars,
        };
    }
    for limits in LEVELS {
        let cut = cut(&value, limits, 0);
        let kept_chars = serialized_len(&cut);
        if kept_chars <= budget {
            let note = note(original_chars, kept_chars, budget, limits);
            return Truncated {
                value: cut,
                note: Some(note),
                original_chars,
                kept_chars,
            };
        }
    }
    // Unreachable for budgets of at least MIN_BUDGET_CHARS: the last level is one short string.
    let value = Value::String(clip_chars(&summary(&value), budget.saturating_sub(2) / 2));
    let kept_chars = serialized_len(&value);
    Truncated {
        note: Some(note(
            original_chars,
            kept_chars,
            budget,
            &LEVELS[LEVELS.len() - 1],
        )),
        value,
        original_chars,
        kept_chars,
    }
}

/// Bounds what the model receives from one run: a completed result and its logs, or an error
/// and its logs, share the budget; a cut adds a last log line saying what was cut and how to ask
/// for less. Paused outcomes are returned as they are.
pub fn truncate_outcome(outcome: Outcome, options: TruncateOptions) -> Outcome {
    let budget = options.budget_chars();
    match outcome {
        Outcome::Completed {
            execution_id,
            result,
            logs,
        } => {
            let result_chars = serialized_len(&result);
            let logs_chars = logs_len(&logs);
            if result_chars + logs_chars <= budget {
                return Outcome::Completed {
                    execution_id,
                    result,
                    logs,
                };
            }
            let (mut logs, logs_note) = bound_logs(logs, logs_budget(budget, result_chars));
            let rest = budget.saturating_sub(logs_len(&logs) + NOTE_RESERVE);
            let truncated = truncate_value(
                result,
                TruncateOptions {
                    max_chars: Some(rest),
                    max_tokens: None,
                },
            );
            logs.extend(logs_note);
            logs.extend(truncated.note.map(|n| format!("[codemode] {n}")));
            Outcome::Completed {
                execution_id,
                result: truncated.value,
                logs,
            }
        }
        Outcome::Error {
            execution_id,
            error,
            code,
            retryable,
            logs,
        } => {
            let error_chars = js_len(&error);
            if error_chars + logs_len(&logs) <= budget {
                return Outcome::Error {
                    execution_id,
                    error,
                    code,
                    retryable,
                    logs,
                };
            }
            let (mut logs, logs_note) = bound_logs(logs, logs_budget(budget, error_chars));
            let rest = budget.saturating_sub(logs_len(&logs));
            let error = truncate_text(
                &error,
                TruncateOptions {
                    max_chars: Some(rest.saturating_sub(NOTE_RESERVE / 2)),
                    max_tokens: None,
                },
            );
            logs.extend(logs_note);
            Outcome::Error {
                execution_id,
                error,
                code,
                retryable,
                logs,
            }
        }
        other => other,
    }
}

/// Characters kept free for the notes a cut adds (each under 350).
const NOTE_RESERVE: usize = 800;

/// The share of the budget logs may keep when result and logs do not fit together: what the
/// result leaves, but at least a quarter.
fn logs_budget(budget: usize, other_chars: usize) -> usize {
    budget
        .saturating_sub(other_chars)
        .max(budget / 4)
        .min(budget.saturating_sub(NOTE_RESERVE))
}

/// Characters of the logs as the model sees them (one line each).
fn logs_len(logs: &[String]) -> usize {
    logs.iter().map(|l| js_len(l) + 1).sum()
}

/// The first log lines that fit `budget`, the last one cut if need be, and a note on the rest.
fn bound_logs(logs: Vec<String>, budget: usize) -> (Vec<String>, Option<String>) {
    if logs_len(&logs) <= budget {
        return (logs, None);
    }
    let total = logs.len();
    let mut kept = Vec::new();
    let mut used = 0;
    for line in logs {
        let len = js_len(&line) + 1;
        if used + len > budget {
            let room = budget.saturating_sub(used + 1);
            if room > 40 {
                kept.push(clip_chars(&line, room));
            }
            break;
        }
        used += len;
        kept.push(line);
    }
    let note = format!(
        "[codemode] console output cut: {} of {total} lines shown. Log less, or return what you need.",
        kept.len()
    );
    (kept, Some(note))
}

/// Cuts `text` to the budget, with a marker saying how much was cut.
pub fn truncate_text(text: &str, options: TruncateOptions) -> String {
    let budget = options.budget_chars();
    let total = text.chars().count();
    if total <= budget {
        return text.to_string();
    }
    let kept: String = text.chars().take(budget).collect();
    format!(
        "{kept}\n\n--- [truncated: showing {budget} of {total} characters; return a smaller result or filter it in code] ---"
    )
}

fn note(original: usize, kept: usize, budget: usize, limits: &Limits) -> String {
    let mut cuts = Vec::new();
    if limits.items < LEVELS[0].items {
        cuts.push(format!("arrays keep their first {} items", limits.items));
    }
    if limits.keys < LEVELS[0].keys {
        cuts.push(format!("objects their first {} keys", limits.keys));
    }
    cuts.push(format!("strings their first {} characters", limits.string));
    if limits.depth < LEVELS[0].depth {
        cuts.push(format!(
            "values nested deeper than {} levels are summarised",
            limits.depth
        ));
    }
    format!(
        "result truncated to fit {budget} characters (about {} tokens): it was {original} characters, {kept} are shown; {}. Each cut says how much it left out. To see more, return less: select the fields and items you need in code (filter, map, slice) and return only those.",
        budget / CHARS_PER_TOKEN,
        cuts.join(", ")
    )
}

/// `value` under `limits`, `depth` levels below the top.
fn cut(value: &Value, limits: &Limits, depth: usize) -> Value {
    match value {
        Value::String(s) => Value::String(cut_string(s, limits.string)),
        Value::Array(items) if !items.is_empty() => {
            if depth >= limits.depth {
                return Value::String(summary(value));
            }
            let keep = limits.items.min(items.len());
            let mut out: Vec<Value> = items[..keep]
                .iter()
                .map(|v| cut(v, limits, depth + 1))
                .collect();
            if keep < items.len() {
                out.push(Value::String(format!(
                    "[… {} more items; {keep} of {} shown]",
                    items.len() - keep,
                    items.len()
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) if !map.is_empty() => {
            if depth >= limits.depth {
                return Value::String(summary(value));
            }
            let keep = limits.keys.min(map.len());
            let mut out = Map::new();
            for (k, v) in map.iter().take(keep) {
                out.insert(
                    cut_string(k, limits.string.max(64)),
                    cut(v, limits, depth + 1),
                );
            }
            if keep < map.len() {
                let mut key = MORE_KEYS.to_string();
                while out.contains_key(&key) {
                    key.push('…');
                }
                out.insert(
                    key,
                    Value::String(format!(
                        "[{} more keys; {keep} of {} shown]",
                        map.len() - keep,
                        map.len()
                    )),
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// `s` cut to `max` characters with a count of the rest, or `s` when it fits.
fn cut_string(s: &str, max: usize) -> String {
    let total = s.chars().count();
    if total <= max {
        return s.to_string();
    }
    let kept: String = s.chars().take(max).collect();
    format!("{kept}… [{} more characters]", total - max)
}

/// `s` cut to at most `max` characters, with no marker.
fn clip_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// A one-line stand-in for a container: what it was and how big.
fn summary(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("[array of {} items]", items.len()),
        Value::Object(map) => format!("[object with {} keys]", map.len()),
        Value::String(s) => format!("[string of {} characters]", s.chars().count()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chars(n: usize) -> TruncateOptions {
        TruncateOptions {
            max_chars: Some(n),
            max_tokens: None,
        }
    }

    #[test]
    fn budgets_are_clamped() {
        assert_eq!(TruncateOptions::default().budget_chars(), 24_000);
        assert_eq!(TruncateOptions::tokens(0).budget_chars(), MIN_BUDGET_CHARS);
        assert_eq!(
            TruncateOptions::tokens(usize::MAX).budget_chars(),
            MAX_BUDGET_CHARS
        );
        assert_eq!(chars(10).budget_chars(), MIN_BUDGET_CHARS);
    }

    #[test]
    fn small_values_are_untouched() {
        let small = json!({"a": [1, 2, 3], "b": "x"});
        let out = truncate_value(small.clone(), TruncateOptions::default());
        assert_eq!(out.value, small);
        assert_eq!(out.note, None);
    }

    #[test]
    fn long_arrays_keep_their_shape_and_count_the_rest() {
        let items: Vec<Value> = (0..5_000)
            .map(|i| json!({"id": i, "title": "issue"}))
            .collect();
        let out = truncate_value(Value::Array(items), TruncateOptions::default());
        let array = out.value.as_array().unwrap();
        assert!(array[0].is_object());
        let last = array.last().unwrap().as_str().unwrap();
        let shown = array.len() - 1;
        assert_eq!(
            last,
            format!("[… {} more items; {shown} of 5000 shown]", 5_000 - shown)
        );
        assert!(out.kept_chars <= 24_000);
        let note = out.note.unwrap();
        assert!(
            note.contains(&format!("it was {} characters", out.original_chars)),
            "{note}"
        );
        assert!(note.contains("return less"), "{note}");
    }

    #[test]
    fn long_strings_are_cut_with_a_count() {
        let out = truncate_result(
            json!({"text": "x".repeat(30_000)}),
            TruncateOptions::default(),
        );
        let text = out["text"].as_str().unwrap();
        assert!(text.starts_with(&"x".repeat(100)));
        let kept = text.chars().take_while(|c| *c == 'x').count();
        assert!(
            text.ends_with(&format!("… [{} more characters]", 30_000 - kept)),
            "{text}"
        );
        assert!(serialized_len(&out) <= 24_000);
    }

    #[test]
    fn deep_values_are_summarised() {
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!({"child": deep, "pad": "y".repeat(200)});
        }
        let out = truncate_value(deep, chars(2_000));
        assert!(out.kept_chars <= 2_000);
        let text = serde_json::to_string(&out.value).unwrap();
        assert!(text.contains("[object with 2 keys]"), "{text}");
    }

    #[test]
    fn wide_objects_count_the_keys_left_out() {
        let map: Map<String, Value> = (0..3_000).map(|i| (format!("k{i}"), json!(i))).collect();
        let out = truncate_result(Value::Object(map), chars(1_000));
        let more = out[MORE_KEYS].as_str().unwrap();
        assert!(more.ends_with("of 3000 shown]"), "{more}");
    }

    #[test]
    fn outcomes_share_the_budget_and_say_what_was_cut() {
        let outcome = Outcome::Completed {
            execution_id: "e".into(),
            result: json!({"rows": vec!["r".repeat(100); 1_000]}),
            logs: vec!["l".repeat(500); 100],
        };
        let Outcome::Completed { result, logs, .. } = truncate_outcome(outcome, chars(8_000))
        else {
            panic!("still completed");
        };
        let total = serialized_len(&result) + logs_len(&logs);
        assert!(total <= 8_000, "{total}");
        assert!(logs.iter().any(|l| l.contains("console output cut")));
        let last = logs.last().unwrap();
        assert!(
            last.starts_with("[codemode] result truncated to fit"),
            "{last}"
        );
        let error = Outcome::error("e", "E".repeat(50_000), crate::ErrorCode::Thrown, vec![]);
        let Outcome::Error { error, .. } = truncate_outcome(error, TruncateOptions::default())
        else {
            panic!("still an error");
        };
        assert!(error.contains("truncated: showing"));
        assert!(error.chars().count() <= 24_000);
    }
}
