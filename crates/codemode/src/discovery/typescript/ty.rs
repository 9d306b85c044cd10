//! A rendered TypeScript type expression, and how expressions, literals and names are
//! written and combined.

use serde_json::Value;
use std::collections::HashSet;

/// How tightly a type expression binds, to know when it needs parentheses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Precedence {
    Union,
    Intersection,
    Primary,
}

/// One rendered type expression.
#[derive(Debug, Clone)]
pub(super) struct Ty {
    pub(super) text: String,
    pub(super) precedence: Precedence,
    /// Whether the text spans several lines (then enclosing objects do too).
    pub(super) multiline: bool,
}

impl Ty {
    pub(super) fn primary(text: impl Into<String>) -> Ty {
        let text = text.into();
        let multiline = text.contains('\n');
        Ty {
            text,
            precedence: Precedence::Primary,
            multiline,
        }
    }

    pub(super) fn unknown() -> Ty {
        Ty::primary("unknown")
    }

    pub(super) fn never() -> Ty {
        Ty::primary("never")
    }

    fn is_unknown(&self) -> bool {
        self.text == "unknown"
    }

    pub(super) fn at_least(&self, precedence: Precedence) -> String {
        if self.precedence < precedence {
            format!("({})", self.text)
        } else {
            self.text.clone()
        }
    }
}

/// A PascalCase type name from any text: `simple-user` gives `SimpleUser`.
pub fn type_name_from(text: &str) -> String {
    let mut out = String::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// A property name as TypeScript accepts it: bare when it is an identifier, quoted otherwise.
pub fn property_key(key: &str) -> String {
    let mut chars = key.chars();
    let is_identifier = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if is_identifier {
        key.to_string()
    } else {
        string_literal(key)
    }
}

/// `text` as a TypeScript string literal.
fn string_literal(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_else(|_| "\"\"".to_string())
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A JSON scalar as a TypeScript literal type; `None` for arrays and objects.
pub(super) fn literal(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(string_literal(s)),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// The union of `members`: `unknown` absorbs it, `never` and repeats drop out.
pub(super) fn union(members: Vec<Ty>) -> Ty {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for member in members {
        if member.is_unknown() {
            return Ty::unknown();
        }
        if member.text == "never" || !seen.insert(member.text.clone()) {
            continue;
        }
        kept.push(member);
    }
    match kept.len() {
        0 => Ty::never(),
        1 => kept.pop().unwrap_or_else(Ty::never),
        _ => Ty {
            multiline: kept.iter().any(|t| t.multiline),
            text: kept
                .iter()
                .map(|t| t.text.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            precedence: Precedence::Union,
        },
    }
}

/// The intersection of `members`: `never` absorbs it, `unknown` and repeats drop out.
pub(super) fn intersection(members: Vec<Ty>) -> Ty {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for member in members {
        if member.text == "never" {
            return Ty::never();
        }
        if member.is_unknown() || !seen.insert(member.text.clone()) {
            continue;
        }
        kept.push(member);
    }
    match kept.len() {
        0 => Ty::unknown(),
        1 => kept.pop().unwrap_or_else(Ty::unknown),
        _ => Ty {
            multiline: kept.iter().any(|t| t.multiline),
            text: kept
                .iter()
                .map(|t| t.at_least(Precedence::Intersection))
                .collect::<Vec<_>>()
                .join(" & "),
            precedence: Precedence::Intersection,
        },
    }
}
