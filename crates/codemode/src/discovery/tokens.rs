//! Words for search: splitting identifiers and prose, folding case and plurals.

/// Words too common to tell tools apart; dropped from queries (unless nothing else is left).
const STOPWORDS: &[&str] = &[
    "a", "all", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it",
    "its", "me", "my", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// Whether `word` (already folded) is a stopword.
pub(crate) fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// Splits text into folded words: on anything not a letter or digit (so `_`, `.`, `/`, `-` and
/// spaces), and at camelCase boundaries (`listPullRequests`, `HTTPServer`); lowercases and
/// folds plurals (`issues` → `issue`, `repositories` → `repository`).
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut current, &mut words);
            continue;
        }
        if c.is_uppercase() && !current.is_empty() {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_uppercase() && next_is_lower)
            {
                flush(&mut current, &mut words);
            }
        }
        current.extend(c.to_lowercase());
    }
    flush(&mut current, &mut words);
    words
}

fn flush(current: &mut String, words: &mut Vec<String>) {
    if !current.is_empty() {
        words.push(fold_plural(current));
        current.clear();
    }
}

/// Folds a plural to its singular with a few English rules; short words stay as they are.
pub(crate) fn fold_plural(word: &str) -> String {
    let len = word.chars().count();
    if len > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..word.len() - 3]);
    }
    if len > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return word[..word.len() - 1].to_string();
    }
    word.to_string()
}

/// The first sentence of a description (up to `. `, a line break, or `max` characters).
pub(crate) fn first_sentence(text: &str, max: usize) -> String {
    let text = text.trim();
    let line = text.lines().next().unwrap_or_default();
    let end = line.find(". ").map_or(line.len(), |i| i + 1);
    super::doc_comment::clip(line[..end].trim(), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_identifiers_and_prose() {
        assert_eq!(tokenize("listPullRequests"), ["list", "pull", "request"]);
        assert_eq!(
            tokenize("issues_create_comment"),
            ["issue", "create", "comment"]
        );
        assert_eq!(
            tokenize("repos/get-content.v2"),
            ["repo", "get", "content", "v2"]
        );
        assert_eq!(
            tokenize("HTTPServer parseJSON"),
            ["http", "server", "parse", "json"]
        );
        assert_eq!(
            tokenize("List repositories, please!"),
            ["list", "repository", "please"]
        );
        assert_eq!(tokenize(""), Vec::<String>::new());
        assert_eq!(tokenize("status access"), ["status", "access"]);
    }

    #[test]
    fn first_sentences() {
        assert_eq!(
            first_sentence("Create a comment. It posts.", 100),
            "Create a comment."
        );
        assert_eq!(first_sentence("Line one\nline two", 100), "Line one");
        assert_eq!(first_sentence("v1.2 is out", 100), "v1.2 is out");
        assert_eq!(first_sentence("", 100), "");
    }
}
