//! Doc comments: descriptions, defaults, formats and examples of a schema, escaped for `/** */`.

use serde_json::Value;

/// Longest description kept in a doc comment, in characters.
const MAX_DESCRIPTION_CHARS: usize = 600;
/// Longest rendered default or example value, in characters.
const MAX_VALUE_CHARS: usize = 120;

/// Makes text safe inside a `/** */` comment: no `*/`, no line or paragraph separators.
pub fn escape_comment(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace("*/", "*\\/")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Cuts `text` to at most `max` characters, marking the cut with `…`.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The lines of documentation a schema carries: its description (or title), then tags.
pub(crate) fn schema_doc_lines(schema: &Value) -> Vec<String> {
    let Some(obj) = schema.as_object() else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let text = obj
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| obj.get("title").and_then(Value::as_str))
        .map(str::trim)
        .unwrap_or_default();
    if !text.is_empty() {
        lines.extend(
            clip(text, MAX_DESCRIPTION_CHARS)
                .lines()
                .map(|line| line.trim_end().to_string()),
        );
    }
    if obj.get("deprecated") == Some(&Value::Bool(true)) {
        lines.push("@deprecated".to_string());
    }
    if let Some(format) = obj.get("format").and_then(Value::as_str) {
        lines.push(format!("@format {format}"));
    }
    if let Some(default) = obj.get("default") {
        lines.push(format!("@default {}", render_value(default)));
    }
    let example = obj
        .get("example")
        .or_else(|| obj.get("examples").and_then(|e| e.as_array()?.first()));
    if let Some(example) = example {
        lines.push(format!("@example {}", render_value(example)));
    }
    lines
}

fn render_value(value: &Value) -> String {
    clip(&value.to_string(), MAX_VALUE_CHARS)
}

/// Renders doc lines as a comment at `indent`, ending in a newline; empty when there are none.
///
/// Short docs without blank lines stay on one line (`/** text @format uri */`); anything
/// longer becomes a block, one line per line.
pub(crate) fn render_doc(lines: &[String], indent: &str) -> String {
    let lines: Vec<String> = trim_blank_edges(lines)
        .iter()
        .map(|line| escape_comment(line))
        .collect();
    let joined = lines.join(" ");
    let fits_one_line = lines.iter().all(|l| !l.is_empty()) && joined.chars().count() <= 100;
    match lines.as_slice() {
        [] => String::new(),
        _ if fits_one_line => format!("{indent}/** {joined} */\n"),
        many => {
            let mut out = format!("{indent}/**\n");
            for line in many {
                if line.is_empty() {
                    out.push_str(&format!("{indent} *\n"));
                } else {
                    out.push_str(&format!("{indent} * {line}\n"));
                }
            }
            out.push_str(&format!("{indent} */\n"));
            out
        }
    }
}

fn trim_blank_edges(lines: &[String]) -> &[String] {
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    &lines[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_comment_terminators_and_separators() {
        assert_eq!(escape_comment("a */ b"), "a *\\/ b");
        assert_eq!(escape_comment("x\u{2028}y\u{2029}z"), "x\\u2028y\\u2029z");
        assert_eq!(escape_comment("a\r\nb"), "a\nb");
    }

    #[test]
    fn short_doc_is_one_line_and_long_doc_is_a_block() {
        let one = schema_doc_lines(&json!({"description": "The name."}));
        assert_eq!(render_doc(&one, "  "), "  /** The name. */\n");
        let short = schema_doc_lines(
            &json!({"description": "When.", "format": "date-time", "default": "now", "examples": [1]}),
        );
        assert_eq!(
            render_doc(&short, ""),
            "/** When. @format date-time @default \"now\" @example 1 */\n"
        );
        let long = schema_doc_lines(
            &json!({"description": "When the thing that happened happened, as seen by the server that saw it happen, in its own time zone.", "format": "date-time"}),
        );
        assert_eq!(
            render_doc(&long, ""),
            "/**\n * When the thing that happened happened, as seen by the server that saw it happen, in its own time zone.\n * @format date-time\n */\n"
        );
        let paragraphs = vec!["One.".to_string(), String::new(), "Two.".to_string()];
        assert_eq!(
            render_doc(&paragraphs, ""),
            "/**\n * One.\n *\n * Two.\n */\n"
        );
        assert_eq!(render_doc(&[], ""), "");
    }

    #[test]
    fn long_descriptions_are_clipped() {
        let long = "x".repeat(2000);
        let lines = schema_doc_lines(&json!({ "description": long }));
        assert_eq!(lines[0].chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(lines[0].ends_with('…'));
    }
}
