//! How values cross the sandbox boundary (the script is `values.js`; `docs/values.md` has the
//! table of every kind of value in every direction).
//!
//! - Connector arguments and the SDK's inputs are JSON as `JSON.stringify` writes it, plus two
//!   envelopes: a BigInt `123n` is `{"$bigint": "123"}`, a `Uint8Array` is `{"$bytes": "<standard
//!   base64, padded>"}`. What JSON would change silently (a Map, a Set, NaN, `undefined` in an
//!   array, a hole, another typed array, an Error, a Promise…) is refused with its path.
//! - A connector's result enters as JSON; an object with exactly one of the two envelope keys
//!   (and a string value) turns back into the JS value.
//! - A `codemode.step` value and the final result are tagged JSON: `{"$date": iso}`,
//!   `{"$map": [[k, v]]}`, `{"$set": [...]}`, `{"$number": "NaN"}`, `{"$undefined": 0}`,
//!   `{"$hole": 0}`, `{"$error": {name, message}}`, `{"$regexp": [source, flags]}`,
//!   `{"$Float64Array": [...]}` (each typed array by its name), `{"$escape": {...}}` for a
//!   plain object that looks like a tag; a step's value comes back from the log as it went in.
//!
//! Every way out refuses a cycle (naming both paths), nesting past [`MAX_DEPTH`], and a BigInt
//! past [`MAX_BIGINT_DIGITS`] digits.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The key of the BigInt envelope.
pub const BIGINT_KEY: &str = "$bigint";
/// The key of the binary envelope.
pub const BYTES_KEY: &str = "$bytes";

/// The deepest nesting of arrays and objects a value may have to leave the sandbox (the JSON
/// parser's limit: 128 opening brackets are refused). `values.js` keeps the same number.
pub const MAX_DEPTH: usize = codemode::value::MAX_DURABLE_DEPTH;

/// The most decimal digits a BigInt may have to cross the boundary, either way (converting
/// one to or from text takes time quadratic in its length, in C, where no deadline reaches).
pub const MAX_BIGINT_DIGITS: usize = 10_000;

/// Parses JSON text that the sandbox wrote; `what` names the value in the error ("the
/// result", "the arguments"), which says what was wrong and how to fix it.
pub fn parse_sandbox_json(text: &str, what: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            format!(
                "{what} is nested more than {MAX_DEPTH} levels deep (arrays and objects inside each other); flatten it, or pass the deep part as a JSON string"
            )
        } else {
            format!("{what} is not valid JSON ({e}); pass only JSON values, BigInt and Uint8Array (docs/values.md)")
        }
    })
}

/// Encodes bytes as the payload of a `$bytes` envelope.
pub fn encode_bytes(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes the payload of a `$bytes` envelope; `None` when it is not valid base64.
pub fn decode_bytes(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// Whether JSON text may hold an envelope (and so needs reviving inside the sandbox).
pub fn may_hold_envelope(json: &str) -> bool {
    json.contains("\"$bigint\"") || json.contains("\"$bytes\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip() {
        let text = encode_bytes(&[0, 1, 2, 255]);
        assert_eq!(text, "AAEC/w==");
        assert_eq!(decode_bytes(&text), Some(vec![0, 1, 2, 255]));
        assert_eq!(decode_bytes("not base64!"), None);
    }

    #[test]
    fn too_deep_json_gets_a_clear_error() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_sandbox_json(&deep(MAX_DEPTH), "the result").is_ok());
        let message = parse_sandbox_json(&deep(MAX_DEPTH + 1), "the result").unwrap_err();
        assert!(message.contains("nested more than 127 levels"), "{message}");
    }

    #[test]
    fn the_script_keeps_the_same_limits() {
        let script = include_str!("values.js");
        assert!(script.contains(&format!("const MAX_DEPTH = {MAX_DEPTH};")));
        assert!(script.contains(&format!("const MAX_BIGINT_DIGITS = {MAX_BIGINT_DIGITS};")));
    }

    #[test]
    fn envelope_detection() {
        assert!(may_hold_envelope(r#"{"$bigint":"1"}"#));
        assert!(!may_hold_envelope(r#"{"bigint":"1"}"#));
    }
}
