//! A query made ready for matching: folded words, their synonyms, and how many must match.

use super::intent::{expand, is_destructive, verb_kind};
use super::synonyms::{is_rewritten, CONTENTS_GAP, CONTENTS_OF, PREPOSITIONS};
use super::tokens::{fold_plural, is_stopword, tokenize};

/// Longest query read, in characters; the rest is ignored (and a note says so).
pub const MAX_QUERY_CHARS: usize = 1_000;
/// Most distinct query words used; the rest are ignored (and a note says so).
pub const MAX_QUERY_WORDS: usize = 32;
/// Queries with at most this many words must match all of them.
pub(crate) const SHORT_QUERY_WORDS: usize = 3;

/// Factor on a word that follows a preposition ("the relation *between two entities*"): it
/// says which one, the words before it say what.
const QUALIFIER_FACTOR: f32 = 0.7;

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
    /// The group of the query's object, when it starts with a verb: its first word that is
    /// neither a verb nor after a preposition.
    pub(crate) object: Option<usize>,
    /// Some word, or one of its synonyms, asks to destroy (`delete`, `remove`…).
    pub(crate) destroys: bool,
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
        let mut qualifiers: Vec<String> = Vec::new();
        let mut after_preposition = false;
        for word in phrases_read(tokenize(&literals_named(text))) {
            if PREPOSITIONS.contains(&word.as_str()) {
                after_preposition = words.iter().any(|w| !is_stopword(w));
                continue;
            }
            if !words.contains(&word) {
                if after_preposition {
                    qualifiers.push(word.clone());
                }
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
        let mut object = None;
        for word in &words {
            let first = groups.len();
            for mut group in expand(word) {
                if qualifiers.contains(word) {
                    for (_, factor) in &mut group {
                        *factor *= QUALIFIER_FACTOR;
                    }
                }
                if !groups.iter().any(|g| g[0].0 == group[0].0) {
                    groups.push(group);
                }
            }
            let names_a_thing = !qualifiers.contains(word) && verb_kind(word).is_none();
            if object.is_none() && names_a_thing && groups.len() > first {
                object = Some(first);
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
        let destroys = groups
            .iter()
            .flatten()
            .any(|(term, _)| is_destructive(term));
        // An object only after a verb: "what files are in this folder" asks about the folder.
        let starts_with_verb = words.first().is_some_and(|w| verb_kind(w).is_some());
        Query {
            object: object.filter(|&g| starts_with_verb && g < groups.len()),
            destroys,
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

/// The text with each URL written as the word `url` and each file name (`config.yaml`) as
/// `file`: a method takes a URL or a file, and no method is named after the one at hand.
fn literals_named(text: &str) -> String {
    text.split_whitespace()
        .map(|chunk| {
            let bare = chunk.trim_matches(|c: char| "\"'`()[]{}<>,;:!?".contains(c));
            let bare = bare.strip_suffix('.').unwrap_or(bare);
            if bare.contains("://") || bare.starts_with("www.") {
                "url"
            } else if is_file_name(bare) {
                "file"
            } else {
                chunk
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tokens with "the contents of" a thing read as what showing them takes (a folder's are
/// listed, a file's read, [`CONTENTS_OF`]), unless a verb other than a reading one asks to
/// change them ("overwrite the contents of a file").
fn phrases_read(mut tokens: Vec<String>) -> Vec<String> {
    let changes = tokens.iter().any(|t| asks_to_change(t));
    if changes {
        return tokens;
    }
    for i in 0..tokens.len() {
        if tokens[i] != "content" {
            continue;
        }
        if tokens.get(i + 1).map(String::as_str) != Some("of") {
            continue;
        }
        let thing = tokens[i + 1..]
            .iter()
            .find(|t| !CONTENTS_GAP.contains(&t.as_str()));
        let action = thing.and_then(|thing| {
            CONTENTS_OF
                .iter()
                .find(|(things, _)| things.contains(&thing.as_str()))
                .map(|(_, action)| *action)
        });
        if let Some(action) = action {
            tokens[i] = action.to_string();
        }
    }
    tokens
}

/// Whether a word is a verb that changes something, or stands for one (`overwrite` → `write`).
fn asks_to_change(word: &str) -> bool {
    match verb_kind(word) {
        Some(reads) => !reads,
        None => expand(word)
            .iter()
            .flatten()
            .skip(1)
            .any(|(term, _)| verb_kind(term) == Some(false)),
    }
}

/// Whether `word` reads as a file name: a name of two characters or more, a dot, and an
/// extension of one to five letters and digits starting with a letter (`report.pdf`, `a.tar.gz`).
fn is_file_name(word: &str) -> bool {
    let Some((name, extension)) = word.rsplit_once('.') else {
        return false;
    };
    let name_ok = name.chars().count() >= 2
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "._-/~".contains(c))
        && name.chars().any(char::is_alphanumeric);
    let extension_ok = (1..=5).contains(&extension.len())
        && extension.starts_with(|c: char| c.is_ascii_alphabetic())
        && extension.chars().all(|c| c.is_ascii_alphanumeric());
    name_ok && extension_ok
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_contents_of_a_thing_are_listed_or_read() {
        let words = |q: &str| Query::parse(q).words;
        assert_eq!(
            words("show the contents of a directory"),
            ["show", "list", "directory"]
        );
        assert_eq!(words("contents of config.yaml"), ["read", "file"]);
        assert_eq!(
            words("overwrite the contents of a file"),
            ["overwrite", "content", "file"]
        );
        assert_eq!(words("file contents"), ["file", "content"]);
        assert_eq!(words("list contents"), ["list", "content"]);
    }

    #[test]
    fn urls_and_file_names_are_named() {
        assert_eq!(
            literals_named("go to https://example.com, then read config.yaml."),
            "go to url then read file"
        );
        assert_eq!(literals_named("open www.rust-lang.org"), "open url");
        assert_eq!(literals_named("find *.rs and v1.2"), "find *.rs and v1.2");
        assert_eq!(literals_named("e.g. this"), "e.g. this");
    }

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
