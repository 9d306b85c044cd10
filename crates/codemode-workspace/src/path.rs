//! Workspace paths: normalisation, the reasons a path is refused, and glob matching (the
//! core's rules).

/// The longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// Normalises `raw` to an absolute POSIX path (`/a/b`): a relative path is taken from `/`,
/// repeated and trailing slashes and `.` segments are dropped. Refuses, with the reason,
/// `..`, URLs, backslashes, NUL and other control characters, percent-encoded bytes, a
/// replacement character (text decoded with the wrong encoding) and overlong paths.
pub fn normalize(raw: &str) -> Result<String, String> {
    refuse_odd(raw)?;
    let mut out = String::with_capacity(raw.len() + 1);
    for segment in raw.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err("`..` is not allowed; write the absolute path from the root".into()),
            s => {
                out.push('/');
                out.push_str(s);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    if out.len() > MAX_PATH_BYTES {
        return Err(format!(
            "it is {} bytes long, over the {MAX_PATH_BYTES}-byte limit",
            out.len()
        ));
    }
    Ok(out)
}

fn refuse_odd(raw: &str) -> Result<(), String> {
    if raw.trim().is_empty() {
        return Err("it is empty; give an absolute path such as /data/items.json".into());
    }
    if let Some(scheme) = raw.find("://").map(|i| &raw[..i]) {
        return Err(format!(
            "it is a URL ({scheme}://...), not a workspace path; give an absolute path such as /data/items.json"
        ));
    }
    if raw.contains('\\') {
        return Err("it contains a backslash; separate directories with `/`".into());
    }
    if let Some(c) = raw.chars().find(|c| c.is_control()) {
        return Err(format!(
            "it contains the control character U+{:04X}; paths are plain text",
            c as u32
        ));
    }
    if raw.contains('\u{FFFD}') {
        return Err("it contains U+FFFD (text decoded with the wrong encoding); use the intended characters".into());
    }
    let bytes = raw.as_bytes();
    let encoded = bytes
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit());
    if encoded {
        return Err(
            "it contains a percent-encoded byte (like %2F); write the plain characters".into(),
        );
    }
    Ok(())
}

/// The directory prefix of a normalised glob pattern before its first wildcard, ending in
/// `/`: only files under it can match.
pub fn literal_prefix(pattern: &str) -> &str {
    let first = pattern.find(['*', '?']).unwrap_or(pattern.len());
    match pattern[..first].rfind('/') {
        Some(i) => &pattern[..=i],
        None => "/",
    }
}

/// Whether a normalised `path` matches a normalised glob `pattern`: `*` is any run of
/// characters within one segment, `?` one character but `/`, and a `**` segment any number
/// of whole segments (zero included); the rules of [`codemode::glob`].
pub fn glob_match(pattern: &str, path: &str) -> bool {
    codemode::glob::path_glob_match(pattern, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_and_bad_ones_refused_with_the_reason() {
        assert_eq!(normalize("a//b/./c/").unwrap(), "/a/b/c");
        assert_eq!(normalize("/").unwrap(), "/");
        for (bad, reason) in [
            ("/a/../b", "`..`"),
            ("https://x.test/a", "URL"),
            ("file:///etc/passwd", "URL"),
            ("/a\\b", "backslash"),
            ("/a\0b", "U+0000"),
            ("/a%2e%2e/b", "percent-encoded"),
            ("/caf\u{FFFD}", "U+FFFD"),
            ("  ", "empty"),
        ] {
            let err = normalize(bad).unwrap_err();
            assert!(err.contains(reason), "{bad:?}: {err}");
        }
        assert!(normalize(&format!("/{}", "a".repeat(MAX_PATH_BYTES))).is_err());
    }

    #[test]
    fn globs_match_within_segments_and_across_them_with_double_star() {
        assert!(glob_match("/src/**/*.ts", "/src/a.ts"));
        assert!(glob_match("/src/**/*.ts", "/src/x/y/a.ts"));
        assert!(!glob_match("/src/*.ts", "/src/x/a.ts"));
        assert!(glob_match("/r/item-?.json", "/r/item-7.json"));
        assert!(!glob_match("/r/item-?.json", "/r/item-17.json"));
        assert!(glob_match("/**", "/a/b"));
        assert!(!glob_match("/a*", "/b"));
        assert_eq!(literal_prefix("/src/**/*.ts"), "/src/");
        assert_eq!(literal_prefix("/a/b.json"), "/a/");
        assert_eq!(literal_prefix("/*"), "/");
    }
}
