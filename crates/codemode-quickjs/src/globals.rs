//! The names a sandbox reserves, and the check that a namespace may become a global.

use std::collections::HashSet;

use codemode::{Namespace, SDK_NAMESPACE};

use crate::error::NamespaceError;

/// Names the sandbox defines or the language reserves; no namespace may use them.
pub const RESERVED_GLOBALS: &[&str] = &[
    // Given by the sandbox.
    SDK_NAMESPACE,
    "console",
    "input",
    "__codemode_entry",
    // JavaScript built-ins of the engine.
    "globalThis",
    "Object",
    "Function",
    "Array",
    "Number",
    "Boolean",
    "String",
    "Symbol",
    "BigInt",
    "Math",
    "JSON",
    "Reflect",
    "Proxy",
    "Date",
    "RegExp",
    "Promise",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "WeakRef",
    "FinalizationRegistry",
    "Iterator",
    "Error",
    "EvalError",
    "RangeError",
    "ReferenceError",
    "SyntaxError",
    "TypeError",
    "URIError",
    "InternalError",
    "AggregateError",
    "SuppressedError",
    "DisposableStack",
    "AsyncDisposableStack",
    "ArrayBuffer",
    "SharedArrayBuffer",
    "DataView",
    "Atomics",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "BigInt64Array",
    "BigUint64Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "parseInt",
    "parseFloat",
    "isNaN",
    "isFinite",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "unescape",
    "eval",
    "NaN",
    "Infinity",
    "undefined",
    "queueMicrotask",
    "performance",
    "navigator",
    "structuredClone",
    "DOMException",
    "CallSite",
    "arguments",
    "atob",
    "btoa",
    // Reserved words.
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

/// Whether `name` is a plain ASCII JavaScript identifier.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Checks that every namespace can become a global of its own.
pub fn check_namespaces(namespaces: &[Namespace]) -> Result<(), NamespaceError> {
    let mut seen = HashSet::new();
    for ns in namespaces {
        if !is_identifier(&ns.name) {
            return Err(NamespaceError::NotIdentifier(ns.name.clone()));
        }
        if RESERVED_GLOBALS.contains(&ns.name.as_str()) {
            return Err(NamespaceError::Reserved(ns.name.clone()));
        }
        if !seen.insert(ns.name.as_str()) {
            return Err(NamespaceError::Duplicate(ns.name.clone()));
        }
    }
    Ok(())
}
