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
    fn envelope_detection() {
        assert!(may_hold_envelope(r#"{"$bigint":"1"}"#));
        assert!(!may_hold_envelope(r#"{"bigint":"1"}"#));
    }
}
