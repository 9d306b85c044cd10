//! Identifiers: turning tool names into JavaScript identifiers and checking connector names.

use super::error::DiscoveryError;
use std::collections::BTreeMap;

/// ECMAScript reserved words (and strict-mode restricted names) that cannot name a binding.
pub const RESERVED_WORDS: &[&str] = &[
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// ECMAScript standard globals (plus `console`) that a connector name must not shadow.
pub const STANDARD_GLOBALS: &[&str] = &[
    "AggregateError",
    "Array",
    "ArrayBuffer",
    "AsyncFunction",
    "AsyncGenerator",
    "AsyncGeneratorFunction",
    "AsyncIterator",
    "Atomics",
    "BigInt",
    "BigInt64Array",
    "BigUint64Array",
    "Boolean",
    "DataView",
    "Date",
    "Error",
    "EvalError",
    "FinalizationRegistry",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "Function",
    "Generator",
    "GeneratorFunction",
    "Infinity",
    "Int16Array",
    "Int32Array",
    "Int8Array",
    "Intl",
    "Iterator",
    "JSON",
    "Map",
    "Math",
    "NaN",
    "Number",
    "Object",
    "Promise",
    "Proxy",
    "RangeError",
    "ReferenceError",
    "Reflect",
    "RegExp",
    "Set",
    "SharedArrayBuffer",
    "String",
    "Symbol",
    "SyntaxError",
    "TypeError",
    "URIError",
    "Uint16Array",
    "Uint32Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "WeakMap",
    "WeakRef",
    "WeakSet",
    "console",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "eval",
    "globalThis",
    "isFinite",
    "isNaN",
    "parseFloat",
    "parseInt",
    "undefined",
    "unescape",
];

/// Whether `name` is a JavaScript reserved word (see [`RESERVED_WORDS`]).
pub fn is_reserved_word(name: &str) -> bool {
    RESERVED_WORDS.contains(&name)
}

/// Whether `name` is an ECMAScript standard global (see [`STANDARD_GLOBALS`]).
pub fn is_standard_global(name: &str) -> bool {
    STANDARD_GLOBALS.contains(&name)
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_ident_part(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// Whether `name` is an ASCII JavaScript identifier that is not a reserved word.
pub fn is_valid_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if is_ident_start(c) => {}
        _ => return false,
    }
    chars.all(is_ident_part) && !is_reserved_word(name)
}

/// Turns a tool name into an identifier, or says why no identifier can be made from it.
///
/// `-`, `.`, `/` and whitespace become `_`; other characters that cannot appear in an ASCII
/// identifier are dropped; a leading digit gets a `_` prefix; a reserved word gets a `_` suffix.
pub fn try_sanitize_tool_name(name: &str) -> Result<String, DiscoveryError> {
    let mut out = String::with_capacity(name.len() + 1);
    for c in name.chars() {
        if c == '-' || c == '.' || c == '/' || c.is_whitespace() {
            out.push('_');
        } else if is_ident_part(c) {
            out.push(c);
        }
    }
    if !out.chars().any(|c| c.is_ascii_alphanumeric() || c == '$') {
        return Err(DiscoveryError::EmptyName {
            original: name.to_string(),
        });
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if is_reserved_word(&out) {
        out.push('_');
    }
    Ok(out)
}

/// Turns a tool name into an identifier; a name with nothing usable becomes `_`.
///
/// Use [`try_sanitize_tool_name`] to refuse such names instead.
pub fn sanitize_tool_name(name: &str) -> String {
    try_sanitize_tool_name(name).unwrap_or_else(|_| "_".to_string())
}

/// Sanitises every name, failing on an unusable one or on two that become the same identifier.
///
/// The error for a collision names both original names. Order is kept.
pub fn sanitize_tool_names<S: AsRef<str>>(names: &[S]) -> Result<Vec<String>, DiscoveryError> {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    let mut out = Vec::with_capacity(names.len());
    for original in names {
        let original = original.as_ref();
        let sanitized = try_sanitize_tool_name(original)?;
        if let Some(first) = seen.insert(sanitized.clone(), original) {
            return Err(DiscoveryError::NameCollision {
                first: first.to_string(),
                second: original.to_string(),
                sanitized,
            });
        }
        out.push(sanitized);
    }
    Ok(out)
}

/// Checks that `name` can be a connector global: an identifier, not `codemode`, not a standard global.
pub fn check_connector_name(name: &str) -> Result<(), DiscoveryError> {
    let reason = if !is_valid_identifier(name) {
        if is_reserved_word(name) {
            "it is a JavaScript reserved word"
        } else {
            "it is not a JavaScript identifier (letters, digits, `_`, `$`; not starting with a digit)"
        }
    } else if name == "codemode" {
        "`codemode` is the platform SDK"
    } else if is_standard_global(name) {
        "it would shadow a JavaScript standard global"
    } else {
        return Ok(());
    };
    Err(DiscoveryError::InvalidConnectorName {
        name: name.to_string(),
        reason: reason.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_become_underscores() {
        assert_eq!(
            sanitize_tool_name("list-pull-requests"),
            "list_pull_requests"
        );
        assert_eq!(sanitize_tool_name("repos.get"), "repos_get");
        assert_eq!(sanitize_tool_name("a b/c"), "a_b_c");
        assert_eq!(sanitize_tool_name("tab\there"), "tab_here");
    }

    #[test]
    fn invalid_characters_are_dropped() {
        assert_eq!(sanitize_tool_name("get@user!"), "getuser");
        assert_eq!(sanitize_tool_name("créer"), "crer");
        assert_eq!(sanitize_tool_name("$ref"), "$ref");
    }

    #[test]
    fn leading_digit_is_prefixed() {
        assert_eq!(sanitize_tool_name("3d-render"), "_3d_render");
    }

    #[test]
    fn reserved_words_are_suffixed() {
        assert_eq!(sanitize_tool_name("delete"), "delete_");
        assert_eq!(sanitize_tool_name("class"), "class_");
        assert_eq!(sanitize_tool_name("deleted"), "deleted");
    }

    #[test]
    fn empty_or_symbols_only_is_an_error() {
        for bad in ["", "   ", "@@@", "---", "_", "__"] {
            let err = try_sanitize_tool_name(bad).unwrap_err();
            assert!(matches!(err, DiscoveryError::EmptyName { .. }), "{bad:?}");
            assert!(err.to_string().contains("no character usable"));
            assert_eq!(sanitize_tool_name(bad), "_");
        }
    }

    #[test]
    fn sanitised_names_are_identifiers() {
        for name in ["a-b", "1x", "new", "x.y/z w", "ok$", "__init__"] {
            assert!(is_valid_identifier(&sanitize_tool_name(name)), "{name}");
        }
    }

    #[test]
    fn collisions_name_both_tools() {
        let err = sanitize_tool_names(&["get-user", "get.user"]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("get-user") && msg.contains("get.user") && msg.contains("get_user"));
        assert_eq!(
            sanitize_tool_names(&["a-b", "c"]).unwrap(),
            vec!["a_b".to_string(), "c".to_string()]
        );
    }

    #[test]
    fn identifiers() {
        assert!(is_valid_identifier("github"));
        assert!(is_valid_identifier("_x1$"));
        assert!(!is_valid_identifier(""));
        assert!(!is_valid_identifier("1a"));
        assert!(!is_valid_identifier("a-b"));
        assert!(!is_valid_identifier("return"));
    }

    #[test]
    fn connector_names() {
        assert!(check_connector_name("github").is_ok());
        for bad in [
            "codemode",
            "Promise",
            "JSON",
            "console",
            "globalThis",
            "if",
            "a-b",
            "",
        ] {
            assert!(check_connector_name(bad).is_err(), "{bad}");
        }
    }
}
