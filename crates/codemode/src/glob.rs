//! Glob matching, one set of rules for the catalogue (`codemode.describe("github.issues_*")`)
//! and the workspace connector's paths (`state.glob("/src/**/*.ts")`): `*` is any run of
//! characters, `?` one character, and everything else is literal (`[`, `]`, `{`, `}` and `\`
//! too: no character classes, alternatives or escapes, so a name or file that holds them is
//! matched as written). In a path, `*` and `?` stay within one `/` segment and a `**` segment
//! is any number of whole segments, zero included.
//!
//! Neither `globset` nor `glob-match` keeps these rules: both read `[…]` as a class and
//! `{a,b}` as alternatives, and `globset` does not match `/a` with `/a/**`.

/// Whether `text` matches `pattern` as a whole: `*` any run of characters (`/` and `.`
/// included), `?` one character, the rest literal.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut i, mut j) = (0, 0);
    // The last `*` seen, and where in `text` its run would end if it took one more character.
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// Whether the `/`-separated `path` matches `pattern` (both normalised: a leading `/`, no
/// empty or `.` segments): segment by segment with [`glob_match`], a `**` segment standing
/// for any number of whole segments (zero included).
pub fn path_glob_match(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').skip(1).collect();
    let segs: Vec<&str> = path.split('/').skip(1).collect();
    // ok[i][j]: pat[i..] matches segs[j..].
    let mut ok = vec![vec![false; segs.len() + 1]; pat.len() + 1];
    ok[pat.len()][segs.len()] = true;
    for i in (0..pat.len()).rev() {
        for j in (0..=segs.len()).rev() {
            ok[i][j] = if pat[i] == "**" {
                ok[i + 1][j] || (j < segs.len() && ok[i][j + 1])
            } else {
                j < segs.len() && ok[i + 1][j + 1] && glob_match(pat[i], segs[j])
            };
        }
    }
    ok[0][0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_and_question_mark_and_nothing_else_are_wildcards() {
        assert!(glob_match("github.issues_*", "github.issues_update"));
        assert!(glob_match("*_update", "issues_update"));
        assert!(glob_match("issues_?et", "issues_get"));
        assert!(!glob_match("issues_?", "issues_get"));
        assert!(glob_match("", ""));
        assert!(glob_match("*", ""));
        assert!(!glob_match("?", ""));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("a*b*c", "aXbYbZ"));
        // Brackets, braces and backslashes are literal.
        assert!(glob_match("[ab].json", "[ab].json"));
        assert!(!glob_match("[ab].json", "a.json"));
        assert!(glob_match("{a,b}*", "{a,b}.ts"));
        assert!(!glob_match("{a,b}*", "a.ts"));
        assert!(glob_match("a\\*", "a\\b"));
        assert!(glob_match("é?", "éü"), "characters, not bytes");
    }

    #[test]
    fn in_a_path_wildcards_stay_within_a_segment_and_double_star_spans_them() {
        // Where the two matchers differed: the same pattern over `/` (and with `**`).
        assert!(glob_match("/a/*", "/a/b/c"));
        assert!(!path_glob_match("/a/*", "/a/b/c"));
        assert!(glob_match("/a?b", "/a/b"));
        assert!(!path_glob_match("/a?b", "/a/b"));
        assert!(glob_match("**", "a.b"));
        assert!(path_glob_match("/a/**", "/a"), "`**` is zero segments too");
        assert!(path_glob_match("/a/**", "/a/b/c"));
        assert!(path_glob_match("/src/**/*.ts", "/src/a.ts"));
        assert!(path_glob_match("/src/**/*.ts", "/src/x/y/a.ts"));
        assert!(!path_glob_match("/src/*.ts", "/src/x/a.ts"));
        assert!(
            path_glob_match("/a**b", "/aXb"),
            "`**` within a segment is `*`"
        );
        assert!(!path_glob_match("/a**b", "/aX/b"));
        assert!(path_glob_match("/[draft].md", "/[draft].md"));
        assert!(!path_glob_match("/[draft].md", "/d.md"));
    }
}
