//! The value envelope: how BigInt and binary values cross the sandbox boundary as JSON.
//!
//! - a BigInt `123n` becomes `{"$bigint": "123"}`;
//! - a `Uint8Array` becomes `{"$bytes": "<standard base64, padded>"}`.
//!
//! An object with exactly one of those keys (and a string value) turns back into the JS value
//! when it enters the sandbox. Everything else is plain JSON: `undefined` becomes `null`,
//! functions, symbols and cycles are refused with a clear error.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The key of the BigInt envelope.
pub const BIGINT_KEY: &str = "$bigint";
/// The key of the binary envelope.
pub const BYTES_KEY: &str = "$bytes";

/// The deepest nesting of arrays and objects a value may have to leave the sandbox (the JSON
/// parser's limit: 128 opening brackets are refused).
pub const MAX_DEPTH: usize = 127;

/// Parses JSON text that the sandbox wrote; `what` names the value in the error ("the
/// result", "the arguments"), which says what was wrong and how to fix it.
pub fn parse_sandbox_json(text: &str, what: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            format!(
                "{what} is nested more than {MAX_DEPTH} levels deep (arrays and objects inside each other); flatten it, or pass the deep part as a JSON string"
            )
        } else {
            format!("{what} is not valid JSON ({e}); pass only JSON values, BigInt and Uint8Array")
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
    fn envelope_detection() {
        assert!(may_hold_envelope(r#"{"$bigint":"1"}"#));
        assert!(!may_hold_envelope(r#"{"bigint":"1"}"#));
    }
}
