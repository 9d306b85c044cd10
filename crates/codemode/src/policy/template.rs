//! The revert templates' language: `${args…}` and `${result…}` paths inside any JSON value,
//! compiled when a rule is read and rendered for each call reverted (see the [`policy`]
//! module's documentation).
//!
//! [`policy`]: super

use serde_json::Value;
use thiserror::Error;

/// Why a revert template could not be read or applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TemplateError {
    /// A `${` without its closing `}`.
    #[error("template {template:?}: `${{` is not closed by `}}`")]
    Unclosed {
        /// The template text.
        template: String,
    },
    /// A path that does not start at `args` or `result`.
    #[error("template {template:?}: path {path:?} must start with `args` or `result`")]
    BadRoot {
        /// The template text.
        template: String,
        /// The path as written.
        path: String,
    },
    /// A path with an empty step, such as `result..id`.
    #[error("template {template:?}: path {path:?} has an empty step")]
    EmptyStep {
        /// The template text.
        template: String,
        /// The path as written.
        path: String,
    },
    /// A path that finds nothing in the call's arguments or result.
    #[error("revert template path `{path}` finds nothing in the call's {root}")]
    Missing {
        /// The path as written.
        path: String,
        /// `args` or `result`.
        root: String,
    },
}

/// Where a path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Args,
    Result,
}

impl Root {
    fn label(self) -> &'static str {
        match self {
            Root::Args => "args",
            Root::Result => "result",
        }
    }
}

/// A parsed `${…}` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Path {
    text: String,
    root: Root,
    steps: Vec<String>,
}

impl Path {
    fn parse(template: &str, text: &str) -> Result<Path, TemplateError> {
        let text = text.trim();
        let split_at = text.find(['.', '/']).unwrap_or(text.len());
        let root = match &text[..split_at] {
            "args" => Root::Args,
            "result" => Root::Result,
            _ => {
                return Err(TemplateError::BadRoot {
                    template: template.to_string(),
                    path: text.to_string(),
                })
            }
        };
        let mut steps = Vec::new();
        let rest = &text[split_at..];
        if !rest.is_empty() {
            let sep = &rest[..1];
            for raw in rest[1..].split(sep) {
                if raw.is_empty() {
                    return Err(TemplateError::EmptyStep {
                        template: template.to_string(),
                        path: text.to_string(),
                    });
                }
                let step = if sep == "/" {
                    raw.replace("~1", "/").replace("~0", "~")
                } else {
                    raw.to_string()
                };
                steps.push(step);
            }
        }
        Ok(Path {
            text: text.to_string(),
            root,
            steps,
        })
    }

    fn lookup<'a>(&self, args: &'a Value, result: &'a Value) -> Result<&'a Value, TemplateError> {
        let mut cur = match self.root {
            Root::Args => args,
            Root::Result => result,
        };
        for step in &self.steps {
            let next = match cur {
                Value::Object(map) => map.get(step),
                Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            cur = next.ok_or_else(|| TemplateError::Missing {
                path: self.text.clone(),
                root: self.root.label().to_string(),
            })?;
        }
        Ok(cur)
    }
}

/// One piece of a string template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    Text(String),
    Path(Path),
}

/// A compiled template: the shape of the revert's arguments.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Template {
    /// A non-string JSON value, copied as it is.
    Literal(Value),
    /// A string that is exactly one placeholder: the value keeps its JSON type.
    Whole(Path),
    /// A string with text and placeholders: always a string.
    Text(Vec<Piece>),
    /// An array of templates.
    Array(Vec<Template>),
    /// An object of templates.
    Object(Vec<(String, Template)>),
}

impl Template {
    /// Compiles `value`, checking every placeholder in it.
    pub(super) fn compile(value: &Value) -> Result<Template, TemplateError> {
        Ok(match value {
            Value::String(s) => {
                let pieces = parse_pieces(s)?;
                match pieces.as_slice() {
                    [Piece::Path(p)] => Template::Whole(p.clone()),
                    _ if pieces.iter().all(|p| matches!(p, Piece::Text(_))) => {
                        Template::Literal(Value::String(
                            pieces
                                .iter()
                                .map(|p| match p {
                                    Piece::Text(t) => t.as_str(),
                                    Piece::Path(_) => "",
                                })
                                .collect(),
                        ))
                    }
                    _ => Template::Text(pieces),
                }
            }
            Value::Array(items) => Template::Array(
                items
                    .iter()
                    .map(Template::compile)
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Template::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), Template::compile(v)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => Template::Literal(other.clone()),
        })
    }

    /// The value for one call's `args` and `result`.
    pub(super) fn render(&self, args: &Value, result: &Value) -> Result<Value, TemplateError> {
        Ok(match self {
            Template::Literal(v) => v.clone(),
            Template::Whole(p) => p.lookup(args, result)?.clone(),
            Template::Text(pieces) => {
                let mut out = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => out.push_str(t),
                        Piece::Path(p) => match p.lookup(args, result)? {
                            Value::String(s) => out.push_str(s),
                            other => out.push_str(&other.to_string()),
                        },
                    }
                }
                Value::String(out)
            }
            Template::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|t| t.render(args, result))
                    .collect::<Result<_, _>>()?,
            ),
            Template::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, t)| Ok((k.clone(), t.render(args, result)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
        })
    }
}

/// Splits a string into text and `${path}` pieces; `$${` is a literal `${`.
fn parse_pieces(s: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            text.push_str(&rest[..i - 1]);
            text.push_str("${");
            rest = &rest[i + 2..];
            continue;
        }
        text.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or_else(|| TemplateError::Unclosed {
            template: s.to_string(),
        })?;
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Path(Path::parse(s, &after[..end])?));
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}
