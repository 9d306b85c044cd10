//! A query made ready for matching: folded words, their synonyms, and how many must match.

use super::intent::{expand, verb_kind};
use super::synonyms::is_rewritten;
use super::tokens::{fold_plural, is_stopword, tokenize};

/// Longest query read, in characters; the rest is ignored (and a note says so).
pub const MAX_QUERY_CHARS: usize = 1_000;
/// Most distinct query words used; the rest are ignored (and a note says so).
pub const MAX_QUERY_WORDS: usize = 32;
/// Queries with at most this many words must match all of them.
pub(crate) const SHORT_QUERY_WORDS: usize = 3;

/// A query made ready for matching.
pub(crate) struct Query {
    /// The query's words as typed (folded), for notes and counts.
    pub(crate) words: Vec<String>,
    /// Per query word, the terms that match it and the factor each scores at.
    pub(crate) groups: Vec<Vec<(String, f32)>>,
    pub(crate) required: usize,
    pub(crate) text: String,
    /// A plural noun and no verb but reading ones ("reviews of a pull request"): lists first.
    pub(crate) wants_list: bool,
    /// Some word is not a stopword; only then may fewer than all words match.
    pub(crate) has_content: bool,
    pub note: Option<String>,
}

impl Query {
    /// Folds the query into words, drops stopwords, and works out how many must match.
    pub fn parse(raw: &str) -> Query {
        let mut note = None;
        let mut text = raw.trim();
        if text.chars().count() > MAX_QUERY_CHARS {
            let end = text
                .char_indices()
                .nth(MAX_QUERY_CHARS)
                .map_or(text.len(), |(i, _)| i);
            text = &text[..end];
            note = Some(format!(
                "the query is longer than {MAX_QUERY_CHARS} characters; only the start was used. Search with a few words."
            ));
        }
        let mut words: Vec<String> = Vec::new();
        for word in tokenize(text) {
            if !words.contains(&word) {
                words.push(word);
            }
        }
        let content: Vec<String> = words
            .iter()
            .filter(|w| !is_stopword(w) || is_rewritten(w))
            .cloned()
            .collect();
        let has_content = !content.is_empty();
        if has_content {
            words = content;
        }
        if words.len() > MAX_QUERY_WORDS {
            words.truncate(MAX_QUERY_WORDS);
            note = Some(format!(
                "the query has more than {MAX_QUERY_WORDS} words; only the first {MAX_QUERY_WORDS} were used. Search with a few words."
            ));
        }
        if words.is_empty() {
            note = Some(
                "empty query: pass a few words, such as codemode.search(\"create issue\")."
                    .to_string(),
            );
        }
        let mut groups: Vec<Vec<(String, f32)>> = Vec::new();
        for word in &words {
            for group in expand(word) {
                if !groups.iter().any(|g| g[0].0 == group[0].0) {
                    groups.push(group);
                }
            }
        }
        if groups.is_empty() {
            groups = words.iter().map(|w| vec![(w.clone(), 1.0)]).collect();
        }
        let required = if groups.len() <= SHORT_QUERY_WORDS {
            groups.len()
        } else {
            // Long queries: half the words must match (at least three), so a model's sentence with
            // stray words still finds the method; ranking puts fuller matches first.
            SHORT_QUERY_WORDS.max(groups.len().div_ceil(2))
        };
        let raw_words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let has_plural = raw_words
            .iter()
            .any(|w| w.len() > 3 && fold_plural(w) != *w && verb_kind(w).is_none());
        let only_reads = raw_words
            .iter()
            .filter_map(|w| verb_kind(w))
            .all(|reads| reads);
        Query {
            words,
            groups,
            wants_list: has_plural && only_reads,
            has_content,
            required,
            text: text.to_lowercase(),
            note,
        }
    }

    /// Whether there is nothing to search for.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_queries_need_most_words() {
        let q = Query::parse("please create a new issue in the repository for me now");
        assert!(q.required < q.words.len());
        assert!(q.required >= SHORT_QUERY_WORDS);
    }

    #[test]
    fn empty_and_huge_queries_are_notes() {
        assert!(Query::parse("  ").note.unwrap().contains("empty query"));
        assert!(Query::parse("!!!").is_empty());
        let huge = "word ".repeat(10_000);
        let q = Query::parse(&huge);
        assert!(q.note.unwrap().contains("longer than"));
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(Query::parse(&many).words.len(), MAX_QUERY_WORDS);
    }
}
