//! Secrets are scrubbed in every form an API may echo them in: random secrets (with
//! characters that encode differently in each form) inside random text, in each encoding,
//! are never found after scrubbing, and text without a secret comes back unchanged.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use codemode::secrets::{Secrets, REDACTED};
use proptest::prelude::*;

/// Every byte but the unreserved ones as `%XX`, in upper or lower case; `+` for a space in
/// form encoding.
fn percent(s: &str, lower: bool, form: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else if form && b == b' ' {
            out.push('+');
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// JSON string content with every non-ASCII character (and `/`) escaped, as ASCII-only
/// encoders write it.
fn json_ascii(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out
}

/// The forms a secret is echoed in, by name.
fn forms(secret: &str) -> Vec<(&'static str, String)> {
    let bytes = secret.as_bytes();
    let json = serde_json::to_string(secret).unwrap();
    vec![
        ("raw", secret.to_string()),
        ("percent upper", percent(secret, false, false)),
        ("percent lower", percent(secret, true, false)),
        ("form", percent(secret, false, true)),
        ("json", json[1..json.len() - 1].to_string()),
        ("json ascii", json_ascii(secret)),
        ("base64", STANDARD.encode(bytes)),
        ("base64 unpadded", STANDARD_NO_PAD.encode(bytes)),
        ("base64url", URL_SAFE.encode(bytes)),
        ("base64url unpadded", URL_SAFE_NO_PAD.encode(bytes)),
        (
            "base64 percent",
            percent(&STANDARD.encode(bytes), false, false),
        ),
        (
            "next link",
            format!(
                "https://api.example/items?cursor=2&key={}",
                percent(secret, false, true)
            ),
        ),
    ]
}

fn secret() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::char::range('a', 'z'),
            2 => proptest::char::range('0', '9'),
            3 => proptest::sample::select(vec![
                ' ', '+', '/', '=', '%', '"', '\\', '&', '?', '#', ':', '\n', '\t', 'ü', '€',
                '🔑', '~', '-', '_', '.',
            ]),
        ],
        8..24,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            6 => proptest::char::range('a', 'z'),
            2 => proptest::char::range('A', 'Z'),
            2 => proptest::sample::select(vec![' ', '%', '\\', '"', '+', '/', '=', '\n', 'é', '漢']),
        ],
        0..40,
    )
    .prop_map(|c| c.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_secret_in_any_form_inside_any_text_is_never_found_after_scrubbing(
        secret in secret(),
        before in text(),
        after in text(),
    ) {
        let secrets = Secrets::new([secret.as_str()]);
        for (name, form) in forms(&secret) {
            let echoed = format!("{before}{form}{after}");
            let scrubbed = secrets.scrub(&echoed);
            prop_assert!(!scrubbed.contains(&form), "{name}: {form:?} left in {scrubbed:?}");
            prop_assert!(!scrubbed.contains(&secret), "{name}: secret left in {scrubbed:?}");
            prop_assert!(scrubbed.contains(REDACTED), "{name}: {scrubbed:?}");
            // Scrubbing what was scrubbed changes nothing more.
            prop_assert_eq!(secrets.scrub(&scrubbed), scrubbed.clone());
        }
    }

    #[test]
    fn a_secret_inside_a_longer_base64_text_is_never_found_after_scrubbing(
        secret in secret(),
        before in proptest::collection::vec(any::<u8>(), 0..7),
        after in proptest::collection::vec(any::<u8>(), 0..7),
    ) {
        // As a Basic credential or a signed cursor carries it: `prefix secret suffix`, encoded.
        let secrets = Secrets::new([secret.as_str()]);
        let mut whole = before.clone();
        whole.extend_from_slice(secret.as_bytes());
        whole.extend_from_slice(&after);
        for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&whole);
            let scrubbed = secrets.scrub(&format!("token={encoded};"));
            prop_assert!(!scrubbed.contains(&encoded), "{encoded} left in {scrubbed:?}");
            // No run of the text left decodes to anything holding the secret.
            for run in scrubbed.split(|c: char| !(c.is_ascii_alphanumeric() || "+/-_".contains(c))) {
                for skip in 0..4.min(run.len()) {
                    let part = &run[skip..];
                    let part = &part[..part.len() / 4 * 4];
                    for e in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                        if let Ok(decoded) = e.decode(part) {
                            prop_assert!(
                                !decoded.windows(secret.len()).any(|w| w == secret.as_bytes()),
                                "{run} decodes to the secret"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn text_without_a_secret_is_unchanged(secret in secret(), text in text()) {
        prop_assume!(!text.contains(&secret));
        let secrets = Secrets::new([secret.as_str()]);
        prop_assert_eq!(secrets.scrub(&text), text.clone());
        let value = serde_json::json!({ "k": [text.clone(), 1, null], text.clone(): true });
        prop_assert_eq!(secrets.scrub_value(value.clone()), value);
    }
}

#[test]
fn json_values_are_scrubbed_in_keys_and_strings_and_no_secret_scrubs_nothing() {
    let secrets = Secrets::new(["tok/en+1"]);
    let v = serde_json::json!({
        "next": "https://api.example/x?key=tok%2Fen%2B1&page=2",
        "tok/en+1": ["dG9rL2VuKzE=", "dG9rL2VuKzE", "dG9rL2VuKzE", 3],
        "raw": "{\"echo\":\"tok\\/en+1\"}",
    });
    let scrubbed = secrets.scrub_value(v).to_string();
    for leaked in ["tok", "dG9rL2VuKzE"] {
        assert!(!scrubbed.contains(leaked), "{scrubbed}");
    }
    let none = Secrets::new([""]);
    assert!(none.is_empty());
    assert_eq!(none.scrub("anything tok/en+1"), "anything tok/en+1");
}
