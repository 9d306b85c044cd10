//! Markdown fences around model code: the whole input, or one block inside prose.

use crate::error::NormalizeError;

/// The language a fence (or its absence) declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// No fence, or a fence without a language.
    Unknown,
    /// `js`, `javascript`, `jsx`, `mjs`, `cjs`.
    JavaScript,
    /// `ts`, `typescript`, `tsx`, `mts`.
    TypeScript,
}

/// The code found in the input, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted<'a> {
    /// The code itself, without fences.
    pub code: &'a str,
    /// How many lines of the input come before `code`.
    pub line_offset: usize,
    /// The language the fence declared.
    pub lang: Lang,
}

struct Block {
    lang: String,
    start: usize,
    end: usize,
    line: usize,
}

fn lang_of(info: &str) -> Result<Lang, NormalizeError> {
    let word = info.split_whitespace().next().unwrap_or("");
    match word.to_ascii_lowercase().as_str() {
        "" => Ok(Lang::Unknown),
        "js" | "javascript" | "jsx" | "mjs" | "cjs" | "node" => Ok(Lang::JavaScript),
        "ts" | "typescript" | "tsx" | "mts" | "cts" => Ok(Lang::TypeScript),
        _ => Err(NormalizeError::Language(word.to_string())),
    }
}

/// The info string of a fence line: three or more backticks, then nothing or a word without
/// backticks (as in CommonMark). Lines such as ``` ``````; ``` or ``` ````x`; ``` (template
/// literals) are code, not fences. Unless `tabs`, so is a line indented with a tab: that is
/// how code is indented (the TypeScript stripper's output is), not Markdown.
fn fence_marker(line: &str, tabs: bool) -> Option<&str> {
    let t = line.trim_start();
    let indent = &line[..line.len() - t.len()];
    let info = t.trim_start_matches('`');
    let word = info.trim_start();
    let fence = t.starts_with("```")
        && (tabs || !indent.contains('\t'))
        && !info.contains('`')
        && (word.is_empty() || word.starts_with(|c: char| c.is_alphabetic()));
    fence.then_some(info)
}

/// Finds the fenced blocks, each with its info string and the byte range of its body; with
/// `tabs`, fence lines may be indented with tabs.
fn blocks(input: &str, tabs: bool) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, usize)> = None;
    let mut pos = 0;
    for (index, raw) in input.split_inclusive('\n').enumerate() {
        let line = raw.trim_end_matches(['\n', '\r']);
        if let Some(info) = fence_marker(line, tabs) {
            match open.take() {
                None => open = Some((info.trim().to_string(), pos + raw.len(), index + 1)),
                Some((lang, start, first)) => out.push(Block {
                    lang,
                    start,
                    end: pos,
                    line: first,
                }),
            }
        }
        pos += raw.len();
    }
    if let Some((lang, start, first)) = open {
        out.push(Block {
            lang,
            start: start.min(input.len()),
            end: input.len(),
            line: first,
        });
    }
    out
}

/// Strips Markdown fences: the whole input fenced, or a single fenced block inside prose.
pub fn extract(input: &str) -> Result<Extracted<'_>, NormalizeError> {
    let starts_fenced = input.trim_start().starts_with("```");
    let has_fence_line = input.split('\n').any(|l| fence_marker(l, false).is_some());
    if !starts_fenced && !has_fence_line {
        return Ok(Extracted {
            code: input,
            line_offset: 0,
            lang: Lang::Unknown,
        });
    }
    // An input that starts with a fence is Markdown throughout: its fences may be indented
    // with tabs.
    let found = blocks(input, starts_fenced);
    let chosen = if starts_fenced || found.len() == 1 {
        found.first()
    } else {
        let code_blocks: Vec<&Block> = found.iter().filter(|b| lang_of(&b.lang).is_ok()).collect();
        if code_blocks.len() != 1 {
            return Err(NormalizeError::SeveralBlocks(found.len()));
        }
        code_blocks.first().copied()
    };
    let Some(block) = chosen else {
        return Ok(Extracted {
            code: input,
            line_offset: 0,
            lang: Lang::Unknown,
        });
    };
    let lang = lang_of(&block.lang)?;
    let code = input.get(block.start..block.end).unwrap_or("");
    Ok(Extracted {
        code,
        line_offset: block.line,
        lang,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_code_is_untouched() {
        let e = extract("async () => 1").unwrap();
        assert_eq!(e.code, "async () => 1");
        assert_eq!(e.line_offset, 0);
    }

    #[test]
    fn whole_fence_is_stripped() {
        let e = extract("```ts\nconst x: number = 1;\nx\n```").unwrap();
        assert_eq!(e.code, "const x: number = 1;\nx\n");
        assert_eq!(e.line_offset, 1);
        assert_eq!(e.lang, Lang::TypeScript);
    }

    #[test]
    fn block_inside_prose() {
        let e = extract("Here you go:\n\n```javascript\nreturn 2\n```\nThis returns 2.").unwrap();
        assert_eq!(e.code, "return 2\n");
        assert_eq!(e.line_offset, 3);
        assert_eq!(e.lang, Lang::JavaScript);
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let e = extract("```js\n1 + 1").unwrap();
        assert_eq!(e.code, "1 + 1");
    }

    #[test]
    fn other_languages_are_refused() {
        assert_eq!(
            extract("```python\nprint(1)\n```"),
            Err(NormalizeError::Language("python".into()))
        );
    }

    #[test]
    fn a_line_of_empty_template_literals_is_code_not_a_fence() {
        let e = extract("f(a);\n``````;\nreturn 1").unwrap();
        assert_eq!(e.code, "f(a);\n``````;\nreturn 1");
    }

    #[test]
    fn tab_indented_backticks_and_backticks_in_the_info_are_code_not_fences() {
        let code = "function f(a) {\n\t\t```ts\n```;\n}\n";
        assert_eq!(extract(code).unwrap().code, code);
        let code = "f(`a\n````x`);\nreturn 1";
        assert_eq!(extract(code).unwrap().code, code);
        // Indented by spaces, as inside a Markdown list, it is still a fence; and so is one
        // indented by a tab in an input that starts with a fence.
        let e = extract("Steps:\n   ```js\n   return 1\n   ```\n").unwrap();
        assert_eq!(e.code, "   return 1\n");
        let e = extract("\t```js\n\treturn 1\n\t```\n").unwrap();
        assert_eq!(e.code, "\treturn 1\n");
    }

    #[test]
    fn several_blocks_are_refused() {
        let input = "a\n```js\n1\n```\nb\n```js\n2\n```\n";
        assert_eq!(extract(input), Err(NormalizeError::SeveralBlocks(2)));
    }
}
