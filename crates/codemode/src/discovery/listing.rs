//! Describe within a budget: a connector or glob's declarations when they fit, otherwise a
//! listing of its methods (name, summary, approval) grouped by name prefix and paged.

use super::catalog::{Catalog, MethodEntry};
use super::describe::{DescribeKind, DescribeOptions, DescribeOutput, OutputTypes};
use crate::glob::glob_match;
use crate::value::serialized_len;

/// Characters of a page kept for its header, notes and JSON framing.
const PAGE_OVERHEAD_CHARS: usize = 2_000;

impl Catalog {
    /// Describes `methods` (all of connector `connector`, or those a glob matched).
    pub(crate) fn describe_methods(
        &self,
        target: &str,
        connector: Option<usize>,
        methods: &[&MethodEntry],
        options: DescribeOptions,
    ) -> Result<DescribeOutput, String> {
        let budget = options.budget_chars();
        let kind = if connector.is_some() {
            DescribeKind::Connector
        } else {
            DescribeKind::Methods
        };
        let description = connector.and_then(|c| self.connectors[c].instructions.clone());
        if options.page.is_none_or(|p| p == 1) {
            let whole = DescribeOutput {
                path: target.to_string(),
                description: description.clone(),
                types: self.declarations_of(methods),
                kind,
                page: None,
                pages: None,
                note: None,
            };
            if fits(&whole, budget) {
                return Ok(whole);
            }
        }
        let lines = listing_lines(self, methods);
        let pages = paginate(&lines, budget.saturating_sub(PAGE_OVERHEAD_CHARS));
        let page = options.page.unwrap_or(1);
        if page == 0 || page > pages.len() {
            return Err(format!(
                "codemode.describe({target:?}) has {} page(s) of methods; page {page} does not exist. Pages count from 1: {{ page: 1 }} to {{ page: {} }}.",
                pages.len(),
                pages.len()
            ));
        }
        let range = pages[page - 1].clone();
        let mut types = String::new();
        let mut current_group = None;
        for (i, (group, line)) in lines[range.clone()].iter().enumerate() {
            if current_group != Some(group) {
                let count = lines.iter().filter(|(g, _)| g == group).count();
                let continued = if i == 0 && range.start > 0 && lines[range.start - 1].0 == *group {
                    ", continued"
                } else {
                    ""
                };
                types.push_str(&format!("  // {group}: {count} methods{continued}\n"));
                current_group = Some(group);
            }
            types.push_str(line);
        }
        let declared = match connector {
            Some(c) => format!("declare const {}: {{\n", self.connectors[c].name),
            None => "// methods matching the glob\n".to_string(),
        };
        let next = if page < pages.len() {
            format!(
                " Next: codemode.describe({target:?}, {{ page: {} }}).",
                page + 1
            )
        } else {
            " This is the last page.".to_string()
        };
        let example = methods.first().map_or(String::new(), |m| m.path.clone());
        let prefix = example.split('_').next().unwrap_or_default();
        let note = format!(
            "{} methods do not fit one answer, so they are listed without types: page {page} of {} (methods {}-{} of {}).{next} Types of one method: codemode.describe({example:?}). One group: codemode.describe(\"{prefix}_*\"). Or codemode.search(\"a few words\").",
            methods.len(),
            pages.len(),
            range.start + 1,
            range.end,
            methods.len(),
        );
        let closing = if connector.is_some() { "};\n" } else { "" };
        Ok(DescribeOutput {
            path: target.to_string(),
            description,
            types: format!("{declared}{types}{closing}"),
            kind,
            page: Some(page),
            pages: Some(pages.len()),
            note: Some(note),
        })
    }

    /// Methods whose path (or, for a pattern without a `.`, whose name) matches the glob.
    pub(crate) fn describe_glob(
        &self,
        pattern: &str,
        options: DescribeOptions,
    ) -> Result<DescribeOutput, String> {
        let matched: Vec<&MethodEntry> = self
            .methods
            .iter()
            .filter(|m| {
                let subject = if pattern.contains('.') {
                    m.path.as_str()
                } else {
                    self.tool_of(m).name.as_str()
                };
                glob_match(pattern, subject)
            })
            .collect();
        if matched.is_empty() {
            let words: String = pattern
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty() && !self.by_connector.contains_key(*w))
                .collect::<Vec<_>>()
                .join(" ");
            return Err(format!(
                "no method matches {pattern:?} (`*` is any run of characters, `?` one; connectors: {}). Search instead: codemode.search({words:?}).",
                self.connector_list()
            ));
        }
        let connectors: Vec<usize> = matched.iter().map(|m| m.connector).collect();
        let single = connectors.windows(2).all(|w| w[0] == w[1]);
        let out = self.describe_methods(pattern, None, &matched, options)?;
        if single && out.page.is_some() {
            let c = connectors[0];
            let name = &self.connectors[c].name;
            return Ok(DescribeOutput {
                types: out.types.replacen(
                    "// methods matching the glob\n",
                    &format!("declare const {name}: {{\n"),
                    1,
                ) + "};\n",
                ..out
            });
        }
        Ok(out)
    }

    /// Whole declarations of `methods`, connector by connector.
    fn declarations_of(&self, methods: &[&MethodEntry]) -> String {
        let mut out = String::new();
        let mut start = 0;
        while start < methods.len() {
            let c = methods[start].connector;
            let end = methods[start..]
                .iter()
                .position(|m| m.connector != c)
                .map_or(methods.len(), |n| start + n);
            out.push_str(
                &self
                    .connector_types(c, &methods[start..end], false, OutputTypes::Whole)
                    .0,
            );
            start = end;
        }
        out
    }
}

/// Whether an answer's JSON fits `budget` characters.
fn fits(out: &DescribeOutput, budget: usize) -> bool {
    serde_json::to_value(out).is_ok_and(|v| serialized_len(&v) <= budget)
}

/// (group, line) per method, sorted by group then name: the group is the name up to its
/// first `_` (the whole name when there is none).
fn listing_lines(catalog: &Catalog, methods: &[&MethodEntry]) -> Vec<(String, String)> {
    let mut lines: Vec<(String, String, String)> = methods
        .iter()
        .map(|m| {
            let tool = catalog.tool_of(m);
            let group = tool
                .name
                .split('_')
                .next()
                .unwrap_or(&tool.name)
                .to_string();
            let mut comment = m.summary.clone().unwrap_or_default();
            if tool.requires_approval {
                if !comment.is_empty() && !comment.ends_with('.') {
                    comment.push('.');
                }
                comment.push_str(" Requires approval.");
            }
            let comment = comment.trim().replace('\n', " ");
            let line = if comment.is_empty() {
                format!("  {}(input): Promise<unknown>;\n", tool.name)
            } else {
                format!("  {}(input): Promise<unknown>; // {comment}\n", tool.name)
            };
            (group, m.path.clone(), line)
        })
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    lines.into_iter().map(|(g, _, l)| (g, l)).collect()
}

/// Splits lines into pages whose JSON-escaped text (with group headers) fits `budget`.
fn paginate(lines: &[(String, String)], budget: usize) -> Vec<std::ops::Range<usize>> {
    let budget = budget.max(1);
    let mut pages = Vec::new();
    let mut start = 0;
    let mut used = 0;
    let mut group: Option<&str> = None;
    for (i, (g, line)) in lines.iter().enumerate() {
        let header = if group != Some(g.as_str()) || i == start {
            g.len() + 40
        } else {
            0
        };
        let cost = escaped_len(line) + header;
        if i > start && used + cost > budget {
            pages.push(start..i);
            start = i;
            used = escaped_len(line) + g.len() + 40;
        } else {
            used += cost;
        }
        group = Some(g.as_str());
    }
    if start < lines.len() || pages.is_empty() {
        pages.push(start..lines.len());
    }
    pages
}

/// Characters of `text` inside a JSON string.
fn escaped_len(text: &str) -> usize {
    serialized_len(&serde_json::Value::String(text.to_string())).saturating_sub(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("github.issues_*", "github.issues_update"));
        assert!(glob_match("*_update", "issues_update"));
        assert!(glob_match("issues_?et", "issues_get"));
        assert!(!glob_match("github.pulls_*", "github.issues_update"));
        assert!(!glob_match("issues_?", "issues_get"));
    }

    #[test]
    fn pages_fit_their_budget() {
        let lines: Vec<(String, String)> = (0..100)
            .map(|i| {
                (
                    format!("g{}", i / 10),
                    format!("  m{i}(input): Promise<unknown>;\n"),
                )
            })
            .collect();
        let pages = paginate(&lines, 500);
        assert!(pages.len() > 1);
        assert_eq!(pages.first().unwrap().start, 0);
        assert_eq!(pages.last().unwrap().end, 100);
        for w in pages.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
    }
}
