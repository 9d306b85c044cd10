//! `[connectors.NAME]`: one table per connector, its name the key, its kind `type`, read by
//! the registry of connector kinds; an error says on which line the table is.

use codemode::kind::{ConnectorConfig, ConnectorKinds};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// The `[connectors]` tables as written, each with where it is in the text.
pub(super) type Tables = BTreeMap<String, Spanned<Value>>;

/// Reads every table with `kinds`; an error names the line, the table and the key.
pub(super) fn read(
    tables: Tables,
    text: &str,
    kinds: &ConnectorKinds,
) -> Result<BTreeMap<String, ConnectorConfig>, String> {
    let mut out = BTreeMap::new();
    for (name, table) in tables {
        let span = table.span();
        let table = table.into_inner();
        if table.is_array() {
            let kind = match kinds.contains(&name) {
                true => name.clone(),
                false => kinds.names().join("\" or \""),
            };
            return Err(at(text, span, &format!(
                "`[[connectors.{name}]]` (an array of tables) is the old shape: write one table per connector, `[connectors.NAME]` with `type = \"{kind}\"`, its name the table key instead of a `name` key"
            )));
        }
        let config = kinds
            .read(&name, table)
            .map_err(|e| at(text, span, &e.to_string()))?;
        out.insert(name, config);
    }
    Ok(out)
}

/// `message` after the place `span` starts at, as the TOML parser says its own errors.
fn at(text: &str, span: Range<usize>, message: &str) -> String {
    let before = text.get(..span.start).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count();
    let content = text[line_start..].lines().next().unwrap_or_default();
    let width = text
        .get(span.clone())
        .map_or(1, |s| s.lines().next().unwrap_or_default().chars().count())
        .max(1);
    let gutter = " ".repeat(line.to_string().len() + 1);
    let marks = format!("{}{}", " ".repeat(column + 1), "^".repeat(width));
    format!("TOML parse error at line {line}, column {}\n{gutter}|\n{line} | {content}\n{gutter}|{marks}\n{message}\n", column + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_shown_as_the_parser_shows_it() {
        let text = "a = 1\n[connectors.x]\ntype = 2\n";
        let start = text.find('[').unwrap();
        let shown = at(text, start..start + 14, "connectors.x: bad");
        assert_eq!(
            shown,
            "TOML parse error at line 2, column 1\n  |\n2 | [connectors.x]\n  | ^^^^^^^^^^^^^^\nconnectors.x: bad\n"
        );
    }
}
