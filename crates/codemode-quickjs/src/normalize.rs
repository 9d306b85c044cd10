//! Turns model code, in any accepted form, into one runnable JavaScript function.
//!
//! Accepted forms: Markdown fences (whole input or one block in prose); an async arrow
//! function (with or without a trailing `;`); a named or anonymous function declaration;
//! `export default`; bare statements whose last expression is the result; a top-level
//! `return`; and TypeScript in any of these (types are stripped with oxc).
//!
//! The model's code is parsed on its own, as a complete program, before it is wrapped: a
//! fragment such as `})();` that would close the wrapper fails to parse instead.

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::ast::ast::{ExportDefaultDeclarationKind, Expression, Program, Statement};
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::{GetSpan, SourceType};
use oxc::transformer::{TransformOptions, Transformer};

use crate::error::NormalizeError;
use crate::fences::{extract, Lang};

/// The script name the sandbox gives the model's code (it appears in stack traces).
pub const CODE_FILE: &str = "code.js";

/// What comes before the model's first line: the result is `(input) => async () => {…}`.
const PREFIX: &str = "\"use strict\"; (input) => async () => {";
/// What comes after the model's last line.
const SUFFIX: &str = "\n}";
/// The name a default-exported anonymous function is bound to.
const ENTRY: &str = "__codemode_entry";

/// Model code made runnable, with what it takes to map positions back to the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// A script whose value is `(input) => async () => { … }`.
    pub source: String,
    /// Lines of the input (fences, prose) before the code.
    pub line_offset: usize,
    /// Bytes of wrapper before the code on the first line of `source`.
    pub first_line_prefix: usize,
    /// For TypeScript: `(generated line, generated column, source line, source column)`,
    /// all 0-based, sorted; positions in `source` map back through it.
    pub source_map: Option<Vec<[u32; 4]>>,
}

impl Normalized {
    /// Maps a 1-based line and column of `source` to a 1-based line and column of the input.
    pub fn original_position(&self, line: usize, column: usize) -> (usize, usize) {
        let (line, column) = match &self.source_map {
            None => (line, column),
            Some(tokens) => {
                let (gl, gc) = (
                    line.saturating_sub(1) as u32,
                    column.saturating_sub(1) as u32,
                );
                let on_line = tokens.iter().filter(|t| t[0] == gl);
                let best = on_line
                    .clone()
                    .rfind(|t| t[1] <= gc)
                    .or_else(|| on_line.clone().next());
                match best {
                    Some(t) => (t[2] as usize + 1, t[3] as usize + 1),
                    None => (line, column),
                }
            }
        };
        let column = if line == 1 {
            column.saturating_sub(self.first_line_prefix).max(1)
        } else {
            column
        };
        (line + self.line_offset, column)
    }
}

/// One change to the model's text: replace `start..end` with `text`.
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

impl Edit {
    fn insert(at: u32, text: impl Into<String>) -> Self {
        Edit {
            start: at as usize,
            end: at as usize,
            text: text.into(),
        }
    }
}

/// Normalises model code into a script whose value is `(input) => async () => {…}`.
pub fn normalize(input: &str, max_bytes: usize) -> Result<Normalized, NormalizeError> {
    if input.len() > max_bytes {
        return Err(NormalizeError::TooLarge {
            bytes: input.len(),
            limit: max_bytes,
        });
    }
    let extracted = extract(input)?;
    let code = extracted.code;
    if code.trim().is_empty() {
        return Err(NormalizeError::Empty {
            only_comments: false,
        });
    }
    let text = anonymous_function_fix(code);
    let allocator = Allocator::default();
    let (program, typescript) = parse_any(&allocator, &text, extracted.lang)
        .map_err(|e| position_error(e, &text, extracted.line_offset))?;
    if program.body.is_empty() && program.directives.is_empty() {
        return Err(NormalizeError::Empty {
            only_comments: true,
        });
    }
    let edits = plan_edits(&program, &text, extracted.line_offset)?;
    let body = apply(&text, edits);
    let wrapped = format!("{PREFIX}{body}{SUFFIX}");
    if !typescript {
        return Ok(Normalized {
            source: wrapped,
            line_offset: extracted.line_offset,
            first_line_prefix: PREFIX.len(),
            source_map: None,
        });
    }
    let (source, map) = strip_types(&wrapped)?;
    Ok(Normalized {
        source,
        line_offset: extracted.line_offset,
        first_line_prefix: PREFIX.len(),
        source_map: Some(map),
    })
}

/// `async function () {}` is not a valid statement; parenthesise it into an expression.
fn anonymous_function_fix(code: &str) -> String {
    let trimmed = code.trim_start();
    let rest = trimmed
        .strip_prefix("async")
        .filter(|r| r.starts_with(char::is_whitespace))
        .map(str::trim_start)
        .unwrap_or(trimmed);
    let anonymous = rest
        .strip_prefix("function")
        .map(|r| r.trim_start().trim_start_matches('*').trim_start())
        .is_some_and(|r| r.starts_with('('));
    if !anonymous {
        return code.to_string();
    }
    let lead = code.len() - trimmed.len();
    let body = trimmed.trim_end().trim_end_matches(';');
    format!("{}({body})", &code[..lead])
}

/// A parse failure: the message and the byte offset in the parsed text.
struct ParseFailure {
    message: String,
    offset: usize,
}

fn parse<'a>(
    allocator: &'a Allocator,
    text: &'a str,
    ts: bool,
) -> Result<Program<'a>, ParseFailure> {
    let source_type = if ts {
        SourceType::ts().with_module(true)
    } else {
        SourceType::mjs()
    };
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let ret = Parser::new(allocator, text, source_type)
        .with_options(options)
        .parse();
    match ret.diagnostics.first() {
        None if !ret.panicked => Ok(ret.program),
        first => Err(ParseFailure {
            message: first
                .map(|d| d.message.to_string())
                .unwrap_or_else(|| "the code could not be parsed".to_string()),
            offset: first
                .and_then(|d| d.labels.first())
                .map(|l| l.offset() as usize)
                .unwrap_or(0),
        }),
    }
}

/// Parses as JavaScript, then TypeScript; returns the program and whether it is TypeScript.
fn parse_any<'a>(
    allocator: &'a Allocator,
    text: &'a str,
    lang: Lang,
) -> Result<(Program<'a>, bool), ParseFailure> {
    if lang == Lang::TypeScript {
        return parse(allocator, text, true).map(|p| (p, true));
    }
    match parse(allocator, text, false) {
        Ok(program) => Ok((program, false)),
        Err(js) => match parse(allocator, text, true) {
            Ok(program) => Ok((program, true)),
            Err(ts) if ts.offset > js.offset => Err(ts),
            Err(_) => Err(js),
        },
    }
}

/// The 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn position_error(failure: ParseFailure, text: &str, line_offset: usize) -> NormalizeError {
    let (line, column) = line_col(text, failure.offset);
    let line = line + line_offset;
    let looks_like_code = text.contains(['(', ')', '{', '}', '=', ';']);
    if looks_like_code {
        NormalizeError::Syntax {
            message: failure.message,
            line,
            column,
        }
    } else {
        NormalizeError::NotCode {
            message: failure.message,
            line,
            column,
        }
    }
}

/// Whether `stmt` returns from the top level (outside any nested function).
fn returns(stmt: &Statement<'_>) -> bool {
    match stmt {
        Statement::ReturnStatement(_) => true,
        Statement::BlockStatement(b) => b.body.iter().any(returns),
        Statement::IfStatement(s) => {
            returns(&s.consequent) || s.alternate.as_ref().is_some_and(returns)
        }
        Statement::TryStatement(t) => {
            t.block.body.iter().any(returns)
                || t.handler
                    .as_ref()
                    .is_some_and(|h| h.body.body.iter().any(returns))
                || t.finalizer
                    .as_ref()
                    .is_some_and(|f| f.body.iter().any(returns))
        }
        Statement::ForStatement(s) => returns(&s.body),
        Statement::ForInStatement(s) => returns(&s.body),
        Statement::ForOfStatement(s) => returns(&s.body),
        Statement::WhileStatement(s) => returns(&s.body),
        Statement::DoWhileStatement(s) => returns(&s.body),
        Statement::LabeledStatement(s) => returns(&s.body),
        Statement::SwitchStatement(s) => s.cases.iter().any(|c| c.consequent.iter().any(returns)),
        _ => false,
    }
}

fn is_function_value(e: &Expression<'_>) -> bool {
    matches!(
        e.without_parentheses(),
        Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
    )
}

/// `replacement`, padded so that the replaced range keeps its lines and, when it can, its width.
fn same_shape(original: &str, replacement: &str) -> String {
    let newlines = original.matches('\n').count();
    if newlines > 0 {
        return format!("{replacement}{}", "\n".repeat(newlines));
    }
    let width = original.chars().count();
    format!("{replacement:width$}")
}

/// Works out how to make the program return its result.
fn plan_edits(
    program: &Program<'_>,
    text: &str,
    line_offset: usize,
) -> Result<Vec<Edit>, NormalizeError> {
    let mut edits = Vec::new();
    let mut call_at_end: Option<String> = None;
    let mut handled = false;
    for stmt in &program.body {
        match stmt {
            Statement::ImportDeclaration(d) => {
                let (line, column) = line_col(text, d.span.start as usize);
                return Err(NormalizeError::Import {
                    line: line + line_offset,
                    column,
                });
            }
            Statement::ExportAllDeclaration(d) => {
                let (line, column) = line_col(text, d.span.start as usize);
                return Err(NormalizeError::Import {
                    line: line + line_offset,
                    column,
                });
            }
            Statement::ExportFromDeclaration(d) => {
                let (line, column) = line_col(text, d.span.start as usize);
                return Err(NormalizeError::Import {
                    line: line + line_offset,
                    column,
                });
            }
            Statement::ExportNamedDeclaration(d) => {
                let range = d.span.start as usize..d.span.end as usize;
                edits.push(Edit {
                    start: range.start,
                    end: range.end,
                    text: same_shape(&text[range.clone()], ""),
                });
            }
            Statement::ExportDeclaration(d) => {
                let range = d.span.start as usize..d.declaration.span().start as usize;
                edits.push(Edit {
                    start: range.start,
                    end: range.end,
                    text: same_shape(&text[range.clone()], ""),
                });
            }
            Statement::ExportDefaultDeclaration(d) => {
                handled = true;
                let decl_start = d.declaration.span().start as usize;
                let prefix = d.span.start as usize..decl_start;
                let original = &text[prefix.clone()];
                match &d.declaration {
                    ExportDefaultDeclarationKind::FunctionDeclaration(f) => {
                        if let Some(id) = &f.id {
                            edits.push(Edit {
                                start: prefix.start,
                                end: prefix.end,
                                text: same_shape(original, ""),
                            });
                            call_at_end = Some(id.name.to_string());
                        } else {
                            edits.push(Edit {
                                start: prefix.start,
                                end: prefix.end,
                                text: same_shape(original, &format!("const {ENTRY} =")),
                            });
                            edits.push(Edit::insert(f.span.end, ";"));
                            call_at_end = Some(ENTRY.to_string());
                        }
                    }
                    ExportDefaultDeclarationKind::ClassDeclaration(_)
                    | ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => {
                        edits.push(Edit {
                            start: prefix.start,
                            end: prefix.end,
                            text: same_shape(original, ""),
                        });
                        handled = false;
                    }
                    other => {
                        let Some(e) = other.as_expression() else {
                            continue;
                        };
                        if is_function_value(e) {
                            edits.push(Edit {
                                start: prefix.start,
                                end: prefix.end,
                                text: same_shape(original, &format!("const {ENTRY} =")),
                            });
                            edits.push(Edit::insert(e.span().end, ";"));
                            call_at_end = Some(ENTRY.to_string());
                        } else {
                            edits.push(Edit {
                                start: prefix.start,
                                end: prefix.end,
                                text: same_shape(original, "return ("),
                            });
                            edits.push(Edit::insert(e.span().end, ")"));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if !handled {
        let last = program
            .body
            .iter()
            .rev()
            .find(|s| !matches!(s, Statement::EmptyStatement(_)));
        match last {
            Some(Statement::ExpressionStatement(s)) => {
                let e = &s.expression;
                let span = e.span();
                edits.push(Edit::insert(span.start, "return ("));
                let close = if is_function_value(e) {
                    ")(input)"
                } else {
                    ")"
                };
                edits.push(Edit::insert(span.end, close));
            }
            Some(Statement::FunctionDeclaration(f)) if !program.body.iter().any(returns) => {
                if let Some(id) = &f.id {
                    call_at_end = Some(id.name.to_string());
                }
            }
            None => {
                if let Some(d) = program.directives.last() {
                    edits.push(Edit::insert(d.expression.span.start, "return ("));
                    edits.push(Edit::insert(d.expression.span.end, ")"));
                }
            }
            _ => {}
        }
    }
    if let Some(name) = call_at_end {
        edits.push(Edit::insert(
            text.len() as u32,
            format!("\n;return {name}(input);"),
        ));
    }
    Ok(edits)
}

fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| e.start);
    let mut out = String::with_capacity(text.len() + 64);
    let mut cursor = 0;
    for edit in edits {
        if edit.start < cursor {
            continue;
        }
        out.push_str(&text[cursor..edit.start]);
        out.push_str(&edit.text);
        cursor = edit.end;
    }
    out.push_str(&text[cursor..]);
    out
}

/// Compiles wrapped TypeScript to JavaScript; returns the code and its position map.
fn strip_types(wrapped: &str) -> Result<(String, Vec<[u32; 4]>), NormalizeError> {
    let allocator = Allocator::default();
    let mut program =
        parse(&allocator, wrapped, true).map_err(|f| NormalizeError::TypeScript(f.message))?;
    let scoping = SemanticBuilder::new()
        .with_enum_eval(true)
        .build(&program)
        .semantic
        .into_scoping();
    let path = Path::new("code.ts");
    let ret = Transformer::new(&allocator, path, &TransformOptions::default())
        .build_with_scoping(scoping, &mut program);
    if let Some(first) = ret.diagnostics.first() {
        return Err(NormalizeError::TypeScript(first.message.to_string()));
    }
    let options = CodegenOptions {
        source_map_path: Some(path.to_path_buf()),
        ..CodegenOptions::default()
    };
    let out = Codegen::new().with_options(options).build(&program);
    let mut tokens: Vec<[u32; 4]> = out
        .map
        .as_ref()
        .map(|m| {
            m.get_tokens()
                .map(|t| {
                    [
                        t.get_dst_line(),
                        t.get_dst_col(),
                        t.get_src_line(),
                        t.get_src_col(),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    tokens.sort_unstable();
    Ok((out.code, tokens))
}
