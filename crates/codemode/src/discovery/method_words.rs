//! What a method's name and description say about it: its own words, its action and what it
//! acts on, and whether it is deprecated.

use super::intent::verb_kind;
use super::tokens::is_stopword;

/// Distinct words of a name that are neither stopwords nor words of the connector name (all
/// of them when that would leave none).
pub(crate) fn own_count(words: &[String], connector: &[String]) -> u16 {
    let own: Vec<String> = words
        .iter()
        .filter(|w| !connector.contains(w))
        .cloned()
        .collect();
    if own.is_empty() {
        content_count(words)
    } else {
        content_count(&own)
    }
}

/// The word of a method name saying what it does: the first of its own words (not the
/// connector's) when that is a verb (`move` in `move_file`, `navigate` in
/// `browser_navigate`), else the second (`star` in `activity_star_repo`, after the namespace).
pub(crate) fn action_word(name: &[String], connector: &[String]) -> Option<String> {
    let own: Vec<&String> = name.iter().filter(|w| !connector.contains(w)).collect();
    match own.as_slice() {
        [first, ..] if verb_kind(first).is_some() => Some((*first).clone()),
        [_, second, ..] => Some((*second).clone()),
        [only] => Some((*only).clone()),
        [] => None,
    }
}

/// The words of a method name it acts on: its own words (not the connector's) other than its
/// action word.
pub(crate) fn object_words(name: &[String], connector: &[String]) -> Vec<String> {
    let action = action_word(name, connector);
    let mut out: Vec<String> = Vec::new();
    for word in name.iter().filter(|w| !connector.contains(w)) {
        if Some(word) != action.as_ref() && !is_stopword(word) && !out.contains(word) {
            out.push(word.clone());
        }
    }
    out
}

/// Whether a description says the method is deprecated (its first words, or a sentence
/// starting "Deprecated").
pub(crate) fn is_deprecated(description: &str) -> bool {
    let lower = description.to_lowercase();
    lower.starts_with("deprecated")
        || lower.contains("deprecated:")
        || lower.contains(". deprecated")
        || lower.contains("(deprecated")
}

/// Distinct words of a field that are not stopwords (at least 1, to divide by).
pub(crate) fn content_count(words: &[String]) -> u16 {
    let distinct: std::collections::HashSet<&String> =
        words.iter().filter(|w| !is_stopword(w)).collect();
    distinct.len().clamp(1, u16::MAX as usize) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        super::super::intent::terms(text)
    }

    #[test]
    fn a_name_is_an_action_and_what_it_acts_on() {
        let connector = words("browser");
        let name = words("browser_close_tab");
        assert_eq!(action_word(&name, &connector).as_deref(), Some("clos"));
        assert_eq!(object_words(&name, &connector), ["tab"]);
        let namespaced = words("activity_star_repo");
        assert_eq!(action_word(&namespaced, &[]).as_deref(), Some("star"));
        assert_eq!(object_words(&namespaced, &[]), ["activity", "repo"]);
        assert_eq!(own_count(&name, &connector), 2);
    }

    #[test]
    fn deprecation_is_read_from_the_description() {
        assert!(is_deprecated(
            "Read a file. DEPRECATED: use read_text_file."
        ));
        assert!(is_deprecated("Deprecated. Use the other one."));
        assert!(!is_deprecated("Lists deprecated APIs of a cluster."));
    }
}
