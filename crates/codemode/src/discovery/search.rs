//! Ranked search over connector methods (an inverted index built once) and snippets.

use super::tokens::{is_stopword, tokenize};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most results one search returns.
pub const MAX_SEARCH_RESULTS: usize = 50;
/// Longest query read, in characters; the rest is ignored (and a note says so).
pub const MAX_QUERY_CHARS: usize = 1_000;
/// Most distinct query words used; the rest are ignored (and a note says so).
pub const MAX_QUERY_WORDS: usize = 32;
/// Queries with at most this many words must match all of them.
const SHORT_QUERY_WORDS: usize = 3;

/// Points for a query word found in the method name.
const NAME_WEIGHT: f32 = 6.0;
/// Points for a query word found in the summary (first sentence of the description).
const SUMMARY_WEIGHT: f32 = 4.0;
/// Points for a query word found in the connector name.
const CONNECTOR_WEIGHT: f32 = 3.0;
/// Points for a query word found in the rest of the description.
const DESCRIPTION_WEIGHT: f32 = 1.0;
/// Factor for a query word that only starts a word of the field (`repo` in `repository`).
const PREFIX_FACTOR: f32 = 0.6;
/// Points for a name or summary made only of query words, scaled by the share of its words
/// the query matched (the better of the two): `list pull requests` prefers the method whose
/// summary is "List pull requests" over one whose name merely contains those words among others.
const COVERAGE_WEIGHT: f32 = 20.0;
/// Points when the query is the method name or path itself.
const EXACT_NAME_BONUS: f32 = 50.0;
/// Shortest query word that also matches as a prefix.
const MIN_PREFIX_CHARS: usize = 3;

/// Field bits of a posting.
const NAME: u8 = 1;
const SUMMARY: u8 = 2;
const DESCRIPTION: u8 = 4;
const CONNECTOR: u8 = 8;

/// Whether a search result is a connector method or a saved snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    /// A connector method, called as `connector.method(input)`.
    Method,
    /// A saved snippet, run with `codemode.run(path, input)`.
    Snippet,
}

/// One ranked result of [`super::Catalog::search`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// What to pass to `describe`: `connector.method`, or the snippet name.
    pub path: String,
    /// The connector (`codemode` for snippets).
    pub connector: String,
    /// The method (`run` for snippets).
    pub method: String,
    /// The first sentence of its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Method or snippet.
    pub kind: SearchKind,
    /// Whether a call pauses the run for a person's approval (false for snippets).
    pub requires_approval: bool,
    /// Relevance; higher is better.
    pub score: f64,
}

/// What `codemode.search(query)` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchOutput {
    /// At most [`MAX_SEARCH_RESULTS`], best first; ties by path.
    pub results: Vec<SearchResult>,
    /// How many matched in all.
    pub total: usize,
    /// Whether matches were left out.
    pub truncated: bool,
    /// Why the results are empty or partial, when there is something to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One searchable document, as the index is built from it.
pub(crate) struct SearchDoc<'a> {
    pub connector: &'a str,
    pub name: &'a str,
    pub summary: &'a str,
    pub description: &'a str,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    fields: u8,
}

#[derive(Debug, Clone)]
struct DocStats {
    /// Non-stopword words in the name.
    name_words: u16,
    /// Non-stopword words in the summary.
    summary_words: u16,
    /// The method name, lowercased.
    name: String,
    /// `connector.method`, lowercased.
    path: String,
}

/// An inverted index over methods: sorted vocabulary with postings, built once.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchIndex {
    vocabulary: Vec<String>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<DocStats>,
}

/// A query made ready for matching.
pub(crate) struct Query {
    words: Vec<String>,
    required: usize,
    text: String,
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
        let content: Vec<String> = words.iter().filter(|w| !is_stopword(w)).cloned().collect();
        if !content.is_empty() {
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
        let required = if words.len() <= SHORT_QUERY_WORDS {
            words.len()
        } else {
            // Long queries: half the words must match (at least three), so a model's sentence with
            // stray words still finds the method; ranking puts fuller matches first.
            SHORT_QUERY_WORDS.max(words.len().div_ceil(2))
        };
        Query {
            words,
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

/// A scored document: (index of the document, score).
pub(crate) type Hit = (usize, f32);

impl SearchIndex {
    /// Builds the index over `docs`, in order (document ids are positions).
    pub fn build<'a>(docs: impl IntoIterator<Item = SearchDoc<'a>>) -> SearchIndex {
        let mut map: BTreeMap<String, Vec<Posting>> = BTreeMap::new();
        let mut stats = Vec::new();
        for (id, doc) in docs.into_iter().enumerate() {
            let id = id as u32;
            let name_words = tokenize(doc.name);
            let summary_words = tokenize(doc.summary);
            stats.push(DocStats {
                name_words: content_count(&name_words),
                summary_words: content_count(&summary_words),
                name: doc.name.to_lowercase(),
                path: format!("{}.{}", doc.connector, doc.name).to_lowercase(),
            });
            let fields = [
                (NAME, name_words),
                (CONNECTOR, tokenize(doc.connector)),
                (SUMMARY, summary_words),
                (DESCRIPTION, tokenize(doc.description)),
            ];
            for (field, words) in fields {
                for word in words {
                    let postings = map.entry(word).or_default();
                    match postings.last_mut() {
                        Some(last) if last.doc == id => last.fields |= field,
                        _ => postings.push(Posting {
                            doc: id,
                            fields: field,
                        }),
                    }
                }
            }
        }
        let (vocabulary, postings) = map.into_iter().unzip();
        SearchIndex {
            vocabulary,
            postings,
            docs: stats,
        }
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// The documents matching `query`, with scores, in no particular order.
    pub fn search(&self, query: &Query) -> Vec<Hit> {
        let n = self.docs.len();
        if query.is_empty() || n == 0 {
            return Vec::new();
        }
        let mut score = vec![0f32; n];
        let mut matched = vec![0u16; n];
        let mut in_name = vec![0u16; n];
        let mut in_summary = vec![0u16; n];
        let mut best = vec![0f32; n];
        let mut hit_fields = vec![0u8; n];
        let mut touched: Vec<u32> = Vec::new();
        for word in &query.words {
            touched.clear();
            for (token_id, factor) in self.matching_tokens(word) {
                for posting in &self.postings[token_id] {
                    let d = posting.doc as usize;
                    let points = field_points(posting.fields) * factor;
                    if hit_fields[d] == 0 {
                        touched.push(posting.doc);
                    }
                    hit_fields[d] |= posting.fields;
                    best[d] = best[d].max(points);
                }
            }
            for &d in &touched {
                let d = d as usize;
                score[d] += best[d];
                matched[d] += 1;
                in_name[d] += u16::from(hit_fields[d] & NAME != 0);
                in_summary[d] += u16::from(hit_fields[d] & SUMMARY != 0);
                best[d] = 0.0;
                hit_fields[d] = 0;
            }
        }
        let mut hits = Vec::new();
        for d in 0..n {
            if (matched[d] as usize) < query.required {
                continue;
            }
            let stats = &self.docs[d];
            let mut total = score[d]
                + COVERAGE_WEIGHT
                    * coverage(in_name[d], stats.name_words)
                        .max(coverage(in_summary[d], stats.summary_words));
            if query.text == stats.name || query.text == stats.path {
                total += EXACT_NAME_BONUS;
            }
            hits.push((d, total));
        }
        hits
    }

    /// Vocabulary entries a query word matches: itself (factor 1) and words it starts (less).
    fn matching_tokens(&self, word: &str) -> Vec<(usize, f32)> {
        let start = self.vocabulary.partition_point(|t| t.as_str() < word);
        let mut out = Vec::new();
        for (i, token) in self.vocabulary[start..].iter().enumerate() {
            if token == word {
                out.push((start + i, 1.0));
            } else if word.len() >= MIN_PREFIX_CHARS && token.starts_with(word) {
                out.push((start + i, PREFIX_FACTOR));
            } else {
                break;
            }
        }
        out
    }
}

/// Distinct words of a field that are not stopwords (at least 1, to divide by).
fn content_count(words: &[String]) -> u16 {
    let distinct: std::collections::HashSet<&String> =
        words.iter().filter(|w| !is_stopword(w)).collect();
    distinct.len().clamp(1, u16::MAX as usize) as u16
}

/// The share of a field's words that query words matched.
fn coverage(matched: u16, words: u16) -> f32 {
    f32::from(matched.min(words)) / f32::from(words.max(1))
}

fn field_points(fields: u8) -> f32 {
    if fields & NAME != 0 {
        NAME_WEIGHT
    } else if fields & SUMMARY != 0 {
        SUMMARY_WEIGHT
    } else if fields & CONNECTOR != 0 {
        CONNECTOR_WEIGHT
    } else if fields & DESCRIPTION != 0 {
        DESCRIPTION_WEIGHT
    } else {
        0.0
    }
}

/// Scores one document without an index (for snippets, which are few and change).
pub(crate) fn score_unindexed(query: &Query, doc: &SearchDoc<'_>) -> Option<f32> {
    if query.is_empty() {
        return None;
    }
    let name = tokenize(doc.name);
    let summary = tokenize(doc.summary);
    let fields = [
        (NAME, &name),
        (SUMMARY, &summary),
        (DESCRIPTION, &tokenize(doc.description)),
    ];
    let mut total = 0.0;
    let mut matched = 0;
    let mut in_name = 0u16;
    let mut in_summary = 0u16;
    for word in &query.words {
        let mut best = 0.0f32;
        let mut hit = 0u8;
        for (field, words) in &fields {
            for candidate in words.iter() {
                let factor = if candidate == word {
                    1.0
                } else if word.len() >= MIN_PREFIX_CHARS && candidate.starts_with(word.as_str()) {
                    PREFIX_FACTOR
                } else {
                    continue;
                };
                best = best.max(field_points(*field) * factor);
                hit |= field;
            }
        }
        if hit != 0 {
            total += best;
            matched += 1;
            in_name += u16::from(hit & NAME != 0);
            in_summary += u16::from(hit & SUMMARY != 0);
        }
    }
    if matched < query.required {
        return None;
    }
    total += COVERAGE_WEIGHT
        * coverage(in_name, content_count(&name))
            .max(coverage(in_summary, content_count(&summary)));
    if query.text == doc.name.to_lowercase() {
        total += EXACT_NAME_BONUS;
    }
    Some(total)
}

/// Rounds a score for output (two decimals).
pub(crate) fn round_score(score: f32) -> f64 {
    (f64::from(score) * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc<'a>(name: &'a str, summary: &'a str) -> SearchDoc<'a> {
        SearchDoc {
            connector: "github",
            name,
            summary,
            description: "",
        }
    }

    #[test]
    fn short_queries_need_every_word() {
        let index = SearchIndex::build([
            doc("issues_create", "Create an issue"),
            doc("issues_list", "List issues"),
        ]);
        let hits = index.search(&Query::parse("create issue"));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 0);
    }

    #[test]
    fn long_queries_need_most_words() {
        let q = Query::parse("please create a new issue in the repository for me now");
        assert!(q.required < q.words.len());
        assert!(q.required >= SHORT_QUERY_WORDS);
    }

    #[test]
    fn prefixes_match_with_less_weight() {
        let index = SearchIndex::build([doc("repos_get", "Get a repository"), doc("repo_x", "x")]);
        let hits = index.search(&Query::parse("repo"));
        assert_eq!(hits.len(), 2);
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
