//! The names a sandbox reserves, and the check that a namespace may become a global.

use std::collections::HashSet;

use codemode::{Namespace, SDK_NAMESPACE};

use crate::error::NamespaceError;

/// Names the sandbox defines; no namespace may use them (reserved words are refused as
/// non-identifiers by `codemode::discovery::is_valid_identifier`).
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
];

/// Checks that every namespace can become a global of its own.
pub fn check_namespaces(namespaces: &[Namespace]) -> Result<(), NamespaceError> {
    let mut seen = HashSet::new();
    for ns in namespaces {
        if !codemode::discovery::is_valid_identifier(&ns.name) {
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
