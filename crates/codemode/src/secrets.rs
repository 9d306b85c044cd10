//! Secret values a connector holds host-side, scrubbed from whatever it hands back (results,
//! errors, log lines) in every form an API may echo them in: raw, percent-encoded (either hex
//! case, `+` for a space), JSON-escaped (`\"`, `\/`, `\u00XX`, surrogate pairs), and base64
//! (standard and URL-safe, padded or not, alone or inside a longer encoded text), and any
//! mix of these (a base64 value percent-encoded in a `next` link, say).
//!
//! Each secret is turned into patterns (itself, and its base64 forms), and a pattern matches
//! text where each of its characters is written literally or in any of the escapes above.

use serde_json::Value;

/// Shown in place of a secret.
pub const REDACTED: &str = "[redacted]";

/// The shortest base64 text (in characters) taken as a secret's: shorter runs would redact
/// innocent text.
const MIN_BASE64_PATTERN: usize = 6;

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The secrets to scrub, with the patterns they are found by; `Debug` shows only how many.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Longest first, so a pattern containing another is scrubbed whole.
    patterns: Vec<Vec<char>>,
    /// Bytes a match can start with.
    starts: Vec<bool>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} patterns)", self.patterns.len())
    }
}

impl Secrets {
    /// The secrets `values` (empty ones are left out).
    pub fn new<I, S>(values: I) -> Secrets
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut patterns: Vec<String> = Vec::new();
        for v in values {
            let v = v.as_ref();
            if v.is_empty() {
                continue;
            }
            patterns.push(v.to_string());
            patterns.extend(base64_patterns(v.as_bytes()));
        }
        patterns.sort_by_key(|p| std::cmp::Reverse(p.len()));
        patterns.dedup();
        let mut starts = vec![false; 256];
        for p in &patterns {
            if let Some(first) = p.bytes().next() {
                starts[usize::from(first)] = true;
            }
            if p.starts_with(' ') {
                starts[usize::from(b'+')] = true;
            }
        }
        if !patterns.is_empty() {
            starts[usize::from(b'%')] = true;
            starts[usize::from(b'\\')] = true;
        }
        Secrets {
            patterns: patterns.into_iter().map(|p| p.chars().collect()).collect(),
            starts,
        }
    }

    /// No secret to scrub.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `text` with every secret, in every form, replaced by [`REDACTED`]; text without one
    /// comes back unchanged.
    pub fn scrub(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_string();
        }
        let bytes = text.as_bytes();
        let mut out = String::new();
        let (mut copied, mut i) = (0, 0);
        while i < bytes.len() {
            if self.starts[usize::from(bytes[i])] {
                if let Some(end) = self.patterns.iter().find_map(|p| matches(bytes, i, p)) {
                    out.push_str(&text[copied..i]);
                    out.push_str(REDACTED);
                    copied = end;
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        if copied == 0 {
            return text.to_string();
        }
        out.push_str(&text[copied..]);
        out
    }

    /// `value` with every string and key scrubbed.
    pub fn scrub_value(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.scrub(&s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.scrub_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.scrub(&k), self.scrub_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// Where a match of `pattern` starting at `at` ends, if one does (trying each form of each
/// character: literal, percent-encoded, `+` for a space, JSON-escaped).
fn matches(text: &[u8], at: usize, pattern: &[char]) -> Option<usize> {
    let Some((&c, rest)) = pattern.split_first() else {
        return Some(at);
    };
    let mut utf8 = [0u8; 4];
    let bytes = c.encode_utf8(&mut utf8).as_bytes();
    let literal = text[at..].starts_with(bytes).then_some(at + bytes.len());
    let plus = (c == ' ' && text.get(at) == Some(&b'+')).then_some(at + 1);
    [
        literal,
        percent(text, at, bytes),
        plus,
        json_escape(text, at, c),
    ]
    .into_iter()
    .flatten()
    .find_map(|end| matches(text, end, rest))
}

/// Where `bytes`, each percent-encoded (either hex case) at `at`, end.
fn percent(text: &[u8], at: usize, bytes: &[u8]) -> Option<usize> {
    let mut j = at;
    for &b in bytes {
        if text.get(j) != Some(&b'%') || hex_byte(text, j + 1) != Some(b) {
            return None;
        }
        j += 3;
    }
    Some(j)
}

/// Where a JSON escape of `c` at `at` ends: `\"`-style short escapes and `\uXXXX` (with a
/// surrogate pair beyond the BMP).
fn json_escape(text: &[u8], at: usize, c: char) -> Option<usize> {
    if text.get(at) != Some(&b'\\') {
        return None;
    }
    let short = match c {
        '"' => Some(b'"'),
        '\\' => Some(b'\\'),
        '/' => Some(b'/'),
        '\u{8}' => Some(b'b'),
        '\u{c}' => Some(b'f'),
        '\n' => Some(b'n'),
        '\r' => Some(b'r'),
        '\t' => Some(b't'),
        _ => None,
    };
    if short.is_some() && text.get(at + 1).copied() == short {
        return Some(at + 2);
    }
    let mut units = [0u16; 2];
    let mut j = at;
    for &unit in c.encode_utf16(&mut units).iter() {
        if text.get(j) != Some(&b'\\') || text.get(j + 1) != Some(&b'u') {
            return None;
        }
        let hi = hex_byte(text, j + 2)?;
        let lo = hex_byte(text, j + 4)?;
        if u16::from_be_bytes([hi, lo]) != unit {
            return None;
        }
        j += 6;
    }
    Some(j)
}

/// The byte two hex digits (either case) at `at` spell.
fn hex_byte(text: &[u8], at: usize) -> Option<u8> {
    let digit = |b: u8| (b as char).to_digit(16);
    let hi = digit(*text.get(at)?)?;
    let lo = digit(*text.get(at + 1)?)?;
    u8::try_from(hi * 16 + lo).ok()
}

/// Base64 of `bytes` in `alphabet`, unpadded.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(alphabet[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// The base64 forms of `secret`: its own encoding (padded and not), and, for text where it
/// is encoded after 1 or 2 other bytes or before others, the characters only its bytes decide.
fn base64_patterns(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for alphabet in [STANDARD, URL_SAFE] {
        let own = base64(secret, alphabet);
        let pad = (3 - secret.len() % 3) % 3;
        out.push(format!("{own}{}", "=".repeat(pad)));
        // Only the characters of whole groups of 3: the last one mixes with what follows.
        out.push(own.chars().take(secret.len() / 3 * 4).collect());
        out.push(own);
        for lead in 1..=2usize {
            let mut shifted = vec![0u8; lead];
            shifted.extend_from_slice(secret);
            let encoded = base64(&shifted, alphabet);
            // The first group's first `lead + 1` characters mix with the bytes before, the
            // last partial group's with the bytes after: keep what only the secret decides.
            let whole = shifted.len() / 3 * 4;
            out.push(encoded.chars().take(whole).skip(lead + 1).collect());
        }
    }
    out.retain(|p| p.len() >= MIN_BASE64_PATTERN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_encoding() {
        assert_eq!(base64(b"", STANDARD), "");
        assert_eq!(base64(b"f", STANDARD), "Zg");
        assert_eq!(base64(b"fo", STANDARD), "Zm8");
        assert_eq!(base64(b"foo", STANDARD), "Zm9v");
        assert_eq!(base64(b"foob", STANDARD), "Zm9vYg");
        assert_eq!(base64(&[0xfb, 0xff], STANDARD), "+/8");
        assert_eq!(base64(&[0xfb, 0xff], URL_SAFE), "-_8");
    }

    #[test]
    fn every_form_is_scrubbed() {
        let s = Secrets::new(["s3cr/t k+y\"ü"]);
        for text in [
            "a s3cr/t k+y\"ü b",
            "a s3cr%2Ft%20k%2By%22%C3%BC b",
            "a s3cr%2ft+k%2by%22%c3%bc b",
            "a s3cr\\/t k+y\\\"\\u00fc b",
            "a s3cr\\u002ft k+y\\u0022\\u00FC b",
        ] {
            assert_eq!(s.scrub(text), "a [redacted] b", "{text}");
        }
        let encoded = base64("s3cr/t k+y\"ü".as_bytes(), STANDARD);
        let scrubbed = s.scrub(&format!("x {encoded}== y"));
        assert!(!scrubbed.contains(&encoded), "{scrubbed}");
        assert_eq!(s.scrub("nothing here"), "nothing here");
        let emoji = Secrets::new(["key🔑value"]);
        assert_eq!(emoji.scrub("\"key\\ud83d\\udd11value\""), "\"[redacted]\"");
    }
}
