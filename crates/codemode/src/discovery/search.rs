//! Ranked search over connector methods (an inverted index built once) and snippets.

use super::intent::{is_destructive, operation_words, terms};
use super::method_words::{action_word, content_count, is_deprecated, object_words, own_count};
use super::query::Query;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most results one search returns.
pub const MAX_SEARCH_RESULTS: usize = 50;

/// Points for a query word found in the method name.
const NAME_WEIGHT: f32 = 6.0;
/// Points for a query word found in the summary (first sentence of the description).
const SUMMARY_WEIGHT: f32 = 4.0;
/// Points for a query word found in the connector name.
const CONNECTOR_WEIGHT: f32 = 3.0;
/// Points for a query word found in the rest of the description.
const DESCRIPTION_WEIGHT: f32 = 1.0;
/// Points for a query word naming what an HTTP operation acts on (its last literal path segment).
const RESOURCE_WEIGHT: f32 = 5.0;
/// Points for a query verb that an HTTP operation's method implies (`POST` → create, add).
const VERB_WEIGHT: f32 = 4.0;
/// Points for a query word in another literal segment of an HTTP operation's path.
const PATH_WEIGHT: f32 = 2.0;
/// Points for a query word naming one of the method's parameters (`url` of `navigate`).
const PARAMETER_WEIGHT: f32 = 2.0;
/// Factor on the score of a method whose description says it is deprecated, so that its
/// replacement ranks first.
const DEPRECATED_FACTOR: f32 = 0.6;
/// Factor on the score of a method whose action destroys (`delete_entities`) when the query
/// asks for nothing of the kind: "link two entities" must not offer a deletion first.
const DESTRUCTIVE_FACTOR: f32 = 0.75;
/// Least score a best result needs to be an answer; below it only stray words matched (a
/// word of some long description) and the search says plainly that nothing fits.
const MIN_FIT_SCORE: f32 = 4.0;
/// Factor for a query word that only starts a word of the field (`repo` in `repository`).
const PREFIX_FACTOR: f32 = 0.6;
/// Points for a name or summary made only of query words, scaled by the share of its words
/// the query matched (the better of the two): `list pull requests` prefers the method whose
/// summary is "List pull requests" over one whose name merely contains those words among others.
const COVERAGE_WEIGHT: f32 = 20.0;
/// Points when the query is the method name or path itself.
const EXACT_NAME_BONUS: f32 = 50.0;
/// Points when a query word is the method name's action word (`star` in `activity_star_repo`).
const ACTION_WEIGHT: f32 = 3.0;
/// Points when the query's object (its first noun) is a word of the method name other than
/// its action (`relation` in `delete_relations` for "remove the relation between two entities").
const OBJECT_WEIGHT: f32 = 3.0;
/// Points for listing a collection when the query asks for a plural without another verb.
const LIST_BONUS: f32 = 4.0;
/// Points for a method whose own fields (not only its connector's name or the body of its
/// description) have the query's words, scaled by the share of words that are there.
const FOCUS_WEIGHT: f32 = 6.0;
/// Fields that say what a method itself is, as opposed to its connector or long prose.
const OWN_FIELDS: u8 = NAME | SUMMARY | VERB | RESOURCE | PATH | PARAMETER;
/// How much a word's rarity scales its points: a word in every method scores
/// `1 - RARITY_WEIGHT / 2` of its points, a word in one method `1 + RARITY_WEIGHT / 2`.
const RARITY_WEIGHT: f32 = 0.5;
/// Shortest query word that also matches as a prefix.
const MIN_PREFIX_CHARS: usize = 3;

/// Field bits of a posting.
const NAME: u8 = 1;
const SUMMARY: u8 = 2;
const DESCRIPTION: u8 = 4;
const CONNECTOR: u8 = 8;
const VERB: u8 = 16;
const RESOURCE: u8 = 32;
const PATH: u8 = 64;
const PARAMETER: u8 = 128;

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
    /// The names of its input's top-level properties.
    pub parameters: &'a [String],
    /// Nested property names and property descriptions of its input, as prose.
    pub parameter_prose: &'a str,
    /// The HTTP method and path of the operation behind the method, when there is one.
    pub http: Option<(&'a str, &'a str)>,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    fields: u8,
}

#[derive(Debug, Clone)]
struct DocStats {
    /// Non-stopword words in the name, less those of the connector name (`browser` in
    /// `browser.browser_click` says nothing about the method).
    name_words: u16,
    /// Non-stopword words in the summary.
    summary_words: u16,
    /// The method name, lowercased.
    name: String,
    /// `connector.method`, lowercased.
    path: String,
    /// Whether it lists a collection (`GET` on a path ending in a literal segment).
    lists: bool,
    /// Whether its description says it is deprecated.
    deprecated: bool,
    /// Whether its action word destroys (`delete`, `remove`…), or an HTTP `DELETE`.
    destructive: bool,
    /// The vocabulary entry of the name's action word (its second word: `star` in
    /// `activity_star_repo`), once the vocabulary is built.
    action: Option<usize>,
    /// The action word itself, until then.
    action_word: Option<String>,
    /// The vocabulary entries of the name's other own words (what it acts on).
    objects: Vec<usize>,
    /// Those words, until the vocabulary is built.
    object_words: Vec<String>,
}

/// An inverted index over methods: sorted vocabulary with postings, built once.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchIndex {
    vocabulary: Vec<String>,
    postings: Vec<Vec<Posting>>,
    /// Per vocabulary entry, the factor its rarity gives its points ([`RARITY_WEIGHT`]).
    rarity: Vec<f32>,
    docs: Vec<DocStats>,
}

/// A scored document: (index of the document, score).
pub(crate) type Hit = (usize, f32);

/// What [`SearchIndex::search`] found.
#[derive(Debug, Default)]
pub(crate) struct Matches {
    /// The documents that fit, with scores, in no particular order.
    pub hits: Vec<Hit>,
    /// Query words (stemmed) that no document has.
    pub unmatched: Vec<String>,
    /// No document has every known word: the hits have the most of them.
    pub partial: bool,
    /// Some documents matched, but only through stray words, so none is given.
    pub weak: bool,
}

impl SearchIndex {
    /// Builds the index over `docs`, in order (document ids are positions).
    pub fn build<'a>(docs: impl IntoIterator<Item = SearchDoc<'a>>) -> SearchIndex {
        let mut map: BTreeMap<String, Vec<Posting>> = BTreeMap::new();
        let mut stats = Vec::new();
        for (id, doc) in docs.into_iter().enumerate() {
            let id = id as u32;
            let name_words = terms(doc.name);
            let summary_words = terms(doc.summary);
            let operation = doc.http.map(|(method, path)| operation_words(method, path));
            let connector_words = terms(doc.connector);
            stats.push(DocStats {
                name_words: own_count(&name_words, &connector_words),
                summary_words: content_count(&summary_words),
                name: doc.name.to_lowercase(),
                path: format!("{}.{}", doc.connector, doc.name).to_lowercase(),
                lists: operation
                    .as_ref()
                    .map_or_else(|| name_words.iter().any(|w| w == "list"), |o| o.lists),
                deprecated: is_deprecated(doc.description),
                destructive: doc.http.map_or_else(
                    || {
                        action_word(&name_words, &connector_words)
                            .is_some_and(|w| is_destructive(&w))
                    },
                    |(method, _)| method.eq_ignore_ascii_case("DELETE"),
                ),
                action: None,
                objects: Vec::new(),
                object_words: object_words(&name_words, &connector_words),
                action_word: action_word(&name_words, &connector_words),
            });
            let mut fields = vec![
                (NAME, name_words),
                (CONNECTOR, connector_words),
                (SUMMARY, summary_words),
                (DESCRIPTION, terms(doc.description)),
                (DESCRIPTION, terms(doc.parameter_prose)),
                (
                    PARAMETER,
                    doc.parameters.iter().flat_map(|p| terms(p)).collect(),
                ),
            ];
            if let Some(words) = operation {
                fields.push((VERB, words.verbs));
                fields.push((RESOURCE, words.resource));
                fields.push((PATH, words.path));
            }
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
        let (vocabulary, postings): (Vec<String>, Vec<Vec<Posting>>) = map.into_iter().unzip();
        for doc in &mut stats {
            doc.objects = doc
                .object_words
                .drain(..)
                .filter_map(|w| vocabulary.binary_search(&w).ok())
                .collect();
            doc.action = doc
                .action_word
                .take()
                .and_then(|w| vocabulary.binary_search(&w).ok());
        }
        let rarity = postings
            .iter()
            .map(|p| rarity(p.len(), stats.len()))
            .collect();
        SearchIndex {
            vocabulary,
            postings,
            rarity,
            docs: stats,
        }
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// The documents matching `query`, with scores, in no particular order.
    ///
    /// A query word matches through itself, a prefix of an indexed word, or a synonym (each
    /// scoring less); words that match no document at all are not required, and when no
    /// document matches all the others, those matching the most of them are the answer.
    pub fn search(&self, query: &Query) -> Matches {
        let n = self.docs.len();
        let mut out = Matches::default();
        if query.is_empty() || n == 0 {
            return out;
        }
        let mut score = vec![0f32; n];
        let mut matched = vec![0u16; n];
        let mut in_name = vec![0f32; n];
        let mut in_summary = vec![0f32; n];
        let mut name_best = vec![0f32; n];
        let mut summary_best = vec![0f32; n];
        let mut unmatched = Vec::new();
        let mut best = vec![0f32; n];
        let mut hit_fields = vec![0u8; n];
        let mut action = vec![0f32; n];
        let mut object = vec![0f32; n];
        let mut focused = vec![0u16; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut known_groups = 0;
        let mut stray_groups = 0;
        for (g, group) in query.groups.iter().enumerate() {
            let is_object = query.object == Some(g);
            touched.clear();
            for (term, term_factor) in group {
                for (token_id, factor) in self.matching_tokens(term) {
                    let rarity = self.rarity[token_id];
                    for posting in &self.postings[token_id] {
                        let d = posting.doc as usize;
                        let points = field_points(posting.fields) * factor * term_factor * rarity;
                        if self.docs[d].action == Some(token_id) {
                            action[d] = action[d].max(factor * term_factor);
                        }
                        if is_object && self.docs[d].objects.contains(&token_id) {
                            object[d] = object[d].max(factor * term_factor);
                        }
                        if hit_fields[d] == 0 {
                            touched.push(posting.doc);
                        }
                        hit_fields[d] |= posting.fields;
                        best[d] = best[d].max(points);
                        if posting.fields & NAME != 0 {
                            name_best[d] = name_best[d].max(factor * term_factor);
                        }
                        if posting.fields & SUMMARY != 0 {
                            summary_best[d] = summary_best[d].max(factor * term_factor);
                        }
                    }
                }
            }
            // A word no method has but in the prose of a description is not required of any.
            let stray = touched
                .iter()
                .all(|&d| hit_fields[d as usize] & !DESCRIPTION == 0);
            known_groups += usize::from(!stray);
            stray_groups += usize::from(stray && !touched.is_empty());
            if touched.is_empty() {
                unmatched.push(group[0].0.clone());
            }
            for &d in &touched {
                let d = d as usize;
                score[d] += best[d];
                matched[d] += u16::from(!stray);
                focused[d] += u16::from(hit_fields[d] & OWN_FIELDS != 0);
                in_name[d] += name_best[d];
                in_summary[d] += summary_best[d];
                name_best[d] = 0.0;
                summary_best[d] = 0.0;
                best[d] = 0.0;
                hit_fields[d] = 0;
            }
        }
        let wanted = query.required.min(known_groups).max(1);
        let most = matched.iter().copied().max().unwrap_or(0) as usize;
        let required = if query.has_content {
            wanted.min(most).max(1)
        } else {
            wanted
        };
        out.partial = required < wanted;
        let mut hits = Vec::new();
        for d in 0..n {
            if (matched[d] as usize) < required {
                continue;
            }
            let stats = &self.docs[d];
            let mut total = score[d]
                + COVERAGE_WEIGHT
                    * coverage(in_name[d], stats.name_words)
                        .max(coverage(in_summary[d], stats.summary_words));
            total += ACTION_WEIGHT * action[d];
            total += OBJECT_WEIGHT * object[d];
            total += FOCUS_WEIGHT * f32::from(focused[d]) / known_groups.max(1) as f32;
            if query.wants_list && stats.lists {
                total += LIST_BONUS;
            }
            if query.text == stats.name || query.text == stats.path {
                total += EXACT_NAME_BONUS;
            }
            if stats.deprecated {
                total *= DEPRECATED_FACTOR;
            }
            if stats.destructive && !query.destroys {
                total *= DESTRUCTIVE_FACTOR;
            }
            hits.push((d, total));
        }
        let best = hits.iter().map(|(_, s)| *s).fold(0.0, f32::max);
        if known_groups == 0 || best < MIN_FIT_SCORE {
            out.weak = (known_groups > 0 && !hits.is_empty()) || stray_groups > 0;
            hits.clear();
        }
        out.hits = hits;
        out.unmatched = unmatched;
        out
    }

    /// The rarity factor of a word (stemmed): as [`rarity`] over the indexed methods, the
    /// highest for a word none of them has.
    fn rarity_of(&self, word: &str) -> f32 {
        let found = self
            .vocabulary
            .binary_search_by(|t| t.as_str().cmp(word))
            .map_or(1, |i| self.postings[i].len());
        rarity(found, self.docs.len().max(found + 1))
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

/// The factor a word in `found` of `total` documents scores at: rarer words say more about
/// which method is meant.
fn rarity(found: usize, total: usize) -> f32 {
    if total < 2 || found == 0 {
        return 1.0;
    }
    let share = (total as f32 / found as f32).ln() / (total as f32).ln();
    1.0 + RARITY_WEIGHT * (share - 0.5)
}

/// The share of a field's words that query words matched (synonyms and prefixes count less).
fn coverage(matched: f32, words: u16) -> f32 {
    matched.min(f32::from(words)) / f32::from(words.max(1))
}

/// The points of the best field a word was found in.
fn field_points(fields: u8) -> f32 {
    [
        (NAME, NAME_WEIGHT),
        (RESOURCE, RESOURCE_WEIGHT),
        (SUMMARY, SUMMARY_WEIGHT),
        (VERB, VERB_WEIGHT),
        (CONNECTOR, CONNECTOR_WEIGHT),
        (PATH, PATH_WEIGHT),
        (PARAMETER, PARAMETER_WEIGHT),
        (DESCRIPTION, DESCRIPTION_WEIGHT),
    ]
    .iter()
    .filter(|(bit, _)| fields & bit != 0)
    .map(|(_, weight)| *weight)
    .fold(0.0, f32::max)
}

/// Scores one document without an index (for snippets, which are few and change).
/// Query words are as rare as the index finds them, so snippets and methods score alike.
pub(crate) fn score_unindexed(
    query: &Query,
    doc: &SearchDoc<'_>,
    index: &SearchIndex,
) -> Option<f32> {
    if query.is_empty() {
        return None;
    }
    let name = terms(doc.name);
    let summary = terms(doc.summary);
    let fields = [
        (NAME, &name),
        (SUMMARY, &summary),
        (DESCRIPTION, &terms(doc.description)),
        (
            PARAMETER,
            &doc.parameters.iter().flat_map(|p| terms(p)).collect(),
        ),
    ];
    let mut total = 0.0;
    let mut matched = 0;
    let mut in_name = 0f32;
    let mut in_summary = 0f32;
    let mut focused = 0f32;
    let objects = object_words(&name, &[]);
    let mut object = 0f32;
    for (g, group) in query.groups.iter().enumerate() {
        if query.object == Some(g) {
            for (word, term_factor) in group {
                if objects.contains(word) {
                    object = object.max(*term_factor);
                }
            }
        }
        let mut best = 0.0f32;
        let mut hit = 0u8;
        for (word, term_factor) in group {
            for (field, words) in &fields {
                for candidate in words.iter() {
                    let factor = if candidate == word {
                        1.0
                    } else if word.len() >= MIN_PREFIX_CHARS && candidate.starts_with(word.as_str())
                    {
                        PREFIX_FACTOR
                    } else {
                        continue;
                    };
                    let points = field_points(*field) * factor * term_factor;
                    best = best.max(points * index.rarity_of(word));
                    hit |= field;
                }
            }
        }
        if hit != 0 {
            total += best;
            matched += 1;
            in_name += f32::from(u8::from(hit & NAME != 0));
            in_summary += f32::from(u8::from(hit & SUMMARY != 0));
            focused += f32::from(u8::from(hit & OWN_FIELDS != 0));
        }
    }
    if matched < query.required {
        return None;
    }
    total += FOCUS_WEIGHT * focused / query.groups.len().max(1) as f32;
    total += OBJECT_WEIGHT * object;
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
#[path = "search_tests.rs"]
mod tests;
