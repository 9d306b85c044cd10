//! What a query means: stems, a small synonym table, and the words an HTTP operation implies.
//!
//! A person types "close an issue"; the operation is `PATCH /repos/{owner}/{repo}/issues/{n}`
//! named `issues_update`. Stemming folds word forms (`merged`, `merging` → `merg`), the synonym
//! table maps everyday verbs and nouns onto the API's (`close` → `update`, `branch` → `ref`),
//! and each operation is indexed with the verb its HTTP method implies and the nouns of its path.

use super::synonyms::{DESTRUCTIVE_VERBS, FILLER, READ_VERBS, REWRITES, SYNONYMS, VERBS};
use super::tokens::tokenize;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Folds a (lowercase, plural-folded) word to a crude stem: `-ing`, `-ed`, `-er` (past five
/// letters) and a final `-e` go,
/// and a doubled last consonant is undone (`starred` → `star`). The same on both sides of a
/// match, so only consistency matters.
pub(crate) fn stem(word: &str) -> String {
    let mut w = word.to_string();
    let len = w.chars().count();
    if !w.is_ascii() || len <= 3 {
        return w;
    }
    let mut stripped = false;
    if len > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
        stripped = true;
    } else if (len > 4 && w.ends_with("ed") && !w.ends_with("eed"))
        || (len > 5 && w.ends_with("er") && !w.ends_with("eer"))
    {
        w.truncate(w.len() - 2);
        stripped = true;
    }
    if stripped {
        let bytes = w.as_bytes();
        let n = bytes.len();
        if n >= 2 && bytes[n - 1] == bytes[n - 2] && !b"aeioulsz".contains(&bytes[n - 1]) {
            w.truncate(n - 1);
        }
    } else if w.ends_with('e') && !w.ends_with("ee") && len > 3 {
        w.truncate(w.len() - 1);
    }
    w
}

/// Words of `text` as search terms: tokenized, plural-folded and stemmed.
pub(crate) fn terms(text: &str) -> Vec<String> {
    tokenize(text).iter().map(|w| stem(w)).collect()
}

/// Factor on a match through a synonym rather than the word itself.
pub(crate) const SYNONYM_FACTOR: f32 = 0.8;

/// The search terms of one query word: itself, its stem, and its synonyms' stems (with the
/// factor each scores at). Empty for filler; several words for rewrites.
pub(crate) fn expand(word: &str) -> Vec<Vec<(String, f32)>> {
    if let Some((_, replacement)) = REWRITES.iter().find(|(w, _)| *w == word) {
        return replacement.iter().map(|r| vec![(stem(r), 1.0)]).collect();
    }
    if FILLER.contains(&word) {
        return Vec::new();
    }
    let stemmed = stem(word);
    let mut out = vec![(stemmed.clone(), 1.0)];
    let table = synonym_table();
    if let Some(synonyms) = table.get(word).or_else(|| table.get(&stemmed)) {
        for s in synonyms {
            if !out.iter().any(|(t, _)| t == s) {
                out.push((s.clone(), SYNONYM_FACTOR));
            }
        }
    }
    vec![out]
}

/// [`SYNONYMS`] by word and by stem (the first entry wins), their synonyms stemmed; built once.
fn synonym_table() -> &'static HashMap<String, Vec<String>> {
    static TABLE: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = HashMap::new();
        for (word, synonyms) in SYNONYMS {
            let stems: Vec<String> = synonyms.iter().map(|s| stem(s)).collect();
            table
                .entry(word.to_string())
                .or_insert_with(|| stems.clone());
            table.entry(stem(word)).or_insert(stems);
        }
        table
    })
}

/// The stems of [`VERBS`], each with whether it only reads ([`READ_VERBS`]); built once.
fn verb_table() -> &'static HashMap<String, bool> {
    static TABLE: OnceLock<HashMap<String, bool>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let reads: Vec<String> = READ_VERBS.iter().map(|v| stem(v)).collect();
        VERBS
            .iter()
            .map(|v| {
                let s = stem(v);
                let read = reads.contains(&s);
                (s, read)
            })
            .collect()
    })
}

/// Whether a query word (folded, unstemmed) is a verb, and whether it only reads.
pub(crate) fn verb_kind(word: &str) -> Option<bool> {
    verb_table().get(&stem(word)).copied()
}

/// Whether a search term (stemmed) is a verb that destroys ([`DESTRUCTIVE_VERBS`]).
pub(crate) fn is_destructive(term: &str) -> bool {
    static STEMS: OnceLock<Vec<String>> = OnceLock::new();
    STEMS
        .get_or_init(|| DESTRUCTIVE_VERBS.iter().map(|v| stem(v)).collect())
        .iter()
        .any(|s| s == term)
}

/// What an HTTP operation implies: the verbs of its method, the noun it acts on (the last
/// literal path segment), and the path's other literal segments.
pub(crate) struct OperationWords {
    /// Stemmed verbs (`get`/`list`, `creat`, `updat`, `delet`, …).
    pub verbs: Vec<String>,
    /// Stemmed words of the last literal path segment.
    pub resource: Vec<String>,
    /// Stemmed words of the other literal segments.
    pub path: Vec<String>,
    /// Whether it is `GET` on a collection (a path ending in a literal segment).
    pub lists: bool,
}

/// The words an HTTP `method` on `path` implies; a path ending in a literal segment is a
/// collection (`GET` lists it, `POST` creates in it), one ending in `{param}` an item.
pub(crate) fn operation_words(method: &str, path: &str) -> OperationWords {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let is_param = |s: &str| s.starts_with('{') || s.contains('{');
    let collection = segments.last().is_some_and(|s| !is_param(s));
    let method = method.to_ascii_uppercase();
    let verbs: &[&str] = match (method.as_str(), collection) {
        ("GET", true) => &["list", "get"],
        ("GET", false) | ("HEAD", _) => &["get"],
        ("POST", _) => &["create", "add"],
        ("PUT", _) => &["set", "replace", "add"],
        ("PATCH", _) => &["update", "edit"],
        ("DELETE", _) => &["delete", "remove"],
        _ => &[],
    };
    let literal: Vec<&str> = segments.iter().copied().filter(|s| !is_param(s)).collect();
    let (resource, rest) = match literal.split_last() {
        Some((last, rest)) => (terms(last), rest.iter().flat_map(|s| terms(s)).collect()),
        None => (Vec::new(), Vec::new()),
    };
    OperationWords {
        verbs: verbs.iter().map(|v| stem(v)).collect(),
        resource,
        path: rest,
        lists: method == "GET" && collection,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_fold_word_forms_together() {
        for (a, b) in [
            ("merged", "merge"),
            ("merging", "merge"),
            ("starred", "star"),
            ("closed", "close"),
            ("listing", "list"),
            ("following", "follow"),
            ("created", "create"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_eq!(stem("user"), "user");
        assert_eq!(stem("fee"), "fee");
    }

    #[test]
    fn queries_expand_to_api_words() {
        let close = expand("close");
        assert_eq!(close.len(), 1);
        assert!(close[0]
            .iter()
            .any(|(t, f)| t == &stem("update") && *f < 1.0));
        assert_eq!(expand("pr").len(), 2);
        assert!(expand("which").is_empty());
    }

    #[test]
    fn operations_imply_verbs_and_nouns() {
        let list = operation_words("GET", "/repos/{owner}/{repo}/pulls");
        assert!(list.verbs.contains(&"list".to_string()));
        assert_eq!(list.resource, vec!["pull".to_string()]);
        assert_eq!(list.path, vec!["repo".to_string()]);
        let fork = operation_words("POST", "/repos/{owner}/{repo}/forks");
        assert!(fork.verbs.contains(&stem("create")));
        let one = operation_words("GET", "/repos/{owner}/{repo}");
        assert_eq!(one.verbs, vec!["get".to_string()]);
    }
}
