//! Stable codes for error outcomes: what kind of failure it was, and whether running the same
//! code again may succeed.
//!
//! The code is derived from the error text and, for an error a connector call threw into the
//! code, from what the host threw (the pass's record, or on a reload the log's failed
//! entries). The runtime and the executor write their own failures in fixed forms (below), so
//! the same execution gets the same code whether its outcome is fresh or read back from the
//! store, and no store schema carries it.

use serde::{Deserialize, Serialize};

/// What kind of failure an error outcome is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The code threw (its own `throw`, or a built-in such as reading a property of
    /// `undefined`) and nothing caught it.
    #[default]
    Thrown,
    /// The code does not parse.
    Syntax,
    /// A connector, method, global or snippet of that name does not exist.
    NotFound,
    /// The arguments do not match the method's input type.
    Schema,
    /// The connector answered the call with an error.
    Connector,
    /// The connector failed to start; every call on it fails until it is fixed.
    Unavailable,
    /// The run or one connector call took longer than its time limit.
    Timeout,
    /// The code used more memory than the sandbox allows.
    Memory,
    /// A bound was reached: calls, log size, console output, stack depth or value size.
    Limit,
    /// A value cannot leave the sandbox (a function, a symbol, a cycle, non-JSON text).
    Unserializable,
    /// The code waits for a promise that nothing will ever settle.
    Stalled,
    /// A replay made other calls than the log recorded (the code is not deterministic).
    Diverged,
    /// A person rejected an action the code asked for.
    Rejected,
    /// The execution was cancelled by the client or a person.
    Cancelled,
    /// The runtime, the sandbox or the store failed; the code may be fine.
    Internal,
}

/// Every code, in the order the reference table lists them.
pub const ERROR_CODES: [ErrorCode; 15] = [
    ErrorCode::Thrown,
    ErrorCode::Syntax,
    ErrorCode::NotFound,
    ErrorCode::Schema,
    ErrorCode::Connector,
    ErrorCode::Unavailable,
    ErrorCode::Timeout,
    ErrorCode::Memory,
    ErrorCode::Limit,
    ErrorCode::Unserializable,
    ErrorCode::Stalled,
    ErrorCode::Diverged,
    ErrorCode::Rejected,
    ErrorCode::Cancelled,
    ErrorCode::Internal,
];

impl ErrorCode {
    /// Whether running the same code again may succeed (a transient failure), as opposed to
    /// needing a change to the code, its input or the configuration first.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::Connector | ErrorCode::Timeout | ErrorCode::Internal
        )
    }

    /// The code as it is serialised (`NOT_FOUND`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Thrown => "THROWN",
            ErrorCode::Syntax => "SYNTAX",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Schema => "SCHEMA",
            ErrorCode::Connector => "CONNECTOR",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Memory => "MEMORY",
            ErrorCode::Limit => "LIMIT",
            ErrorCode::Unserializable => "UNSERIALIZABLE",
            ErrorCode::Stalled => "STALLED",
            ErrorCode::Diverged => "DIVERGED",
            ErrorCode::Rejected => "REJECTED",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// The code of what the host threw into the code for a call of `namespace.method`:
    /// `logged` says whether the call got a log entry (it reached its connector, or replayed
    /// one that had).
    pub fn of_host_throw(namespace: &str, method: &str, logged: bool, message: &str) -> Self {
        if namespace == crate::executor::SDK_NAMESPACE {
            return match method {
                // A step's own function threw; a snippet's code failed as code does.
                "step" | "run" => ErrorCode::of_error(message, &[]),
                _ if message.contains("not found") || message.contains("no snippet") => {
                    ErrorCode::NotFound
                }
                _ => ErrorCode::Schema,
            };
        }
        if logged {
            if is_call_timeout(message) {
                return ErrorCode::Timeout;
            }
            // An action a person rejected while approving others started with it.
            if message.contains(") was rejected by ") && message.ends_with("; it did not run") {
                return ErrorCode::Rejected;
            }
            return ErrorCode::Connector;
        }
        if message.contains(" failed to start") {
            ErrorCode::Unavailable
        } else if message.contains(" is not a method") {
            ErrorCode::NotFound
        } else if message.contains("characters serialised; one durable value") {
            ErrorCode::Limit
        } else {
            ErrorCode::Schema
        }
    }

    /// The code of a failed pass's error text. `thrown` is what the host threw into the code,
    /// with its code (newest last): an uncaught error that carries one of those messages is
    /// that failure.
    pub fn of_error(error: &str, thrown: &[(ErrorCode, String)]) -> Self {
        if let Some(code) = FIXED
            .iter()
            .find(|(prefix, _)| error.starts_with(prefix))
            .map(|(_, code)| *code)
        {
            return code;
        }
        if error.contains(" characters serialised; one durable value may be at most ") {
            return ErrorCode::Limit;
        }
        if let Some((code, _)) = thrown
            .iter()
            .rev()
            .find(|(_, message)| !message.is_empty() && error.contains(message.as_str()))
        {
            return *code;
        }
        let thrown_kind = |name: &str| error.starts_with(name);
        if thrown_kind("SyntaxError:") {
            return ErrorCode::Syntax;
        }
        if thrown_kind("ReferenceError:") && error.contains(" is not defined") {
            return ErrorCode::NotFound;
        }
        // The forms the host and the sandbox write for a name or an input that is wrong, for
        // an outcome read back from the store (the pass's own record is gone by then).
        if error.contains(" is not a method of connector ")
            || error.contains(" is not a connector; did you mean ")
            || error.contains(" is not a connector. The connectors are: ")
        {
            return ErrorCode::NotFound;
        }
        if error.contains(": invalid input: ") && error.contains("for the input type.")
            || thrown_kind("TypeError:") && error.contains(" argument(s), got ")
        {
            return ErrorCode::Schema;
        }
        if thrown_kind("TypeError:")
            && (error.contains("cannot leave the sandbox")
                || error.contains("which JSON text outside the sandbox cannot carry")
                || error.contains(" cannot be sent to a connector")
                || error.contains(" cannot be recorded by codemode.step")
                || error.contains(" cannot be returned"))
        {
            return ErrorCode::Unserializable;
        }
        if error.contains("Error: connector ") && error.contains(" failed to start: ") {
            return ErrorCode::Unavailable;
        }
        ErrorCode::Thrown
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a connector's error is the runtime's per-call time limit (`x.y did not answer
/// within N ms`).
fn is_call_timeout(message: &str) -> bool {
    message
        .strip_suffix(" ms")
        .and_then(|m| m.rsplit_once(" did not answer within "))
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// How the runtime and an executor begin the failures they write themselves (an uncaught
/// error of the code begins with its name, `Error:`, or with `Uncaught`, so it never matches).
/// An executor that writes these forms gets these codes.
const FIXED: &[(&str, ErrorCode)] = &[
    ("Time limit:", ErrorCode::Timeout),
    ("Memory limit:", ErrorCode::Memory),
    ("Console limit:", ErrorCode::Limit),
    ("Stack limit:", ErrorCode::Limit),
    ("call limit:", ErrorCode::Limit),
    ("log limit:", ErrorCode::Limit),
    ("The result is nested more than", ErrorCode::Unserializable),
    ("The result is not valid JSON", ErrorCode::Unserializable),
    ("The result cannot be returned:", ErrorCode::Unserializable),
    (
        "The code is waiting for a promise that nothing will ever settle",
        ErrorCode::Stalled,
    ),
    ("The execution was cancelled", ErrorCode::Cancelled),
    ("the execution was cancelled", ErrorCode::Cancelled),
    ("replay diverged", ErrorCode::Diverged),
    ("internal error", ErrorCode::Internal),
    ("the store ", ErrorCode::Internal),
    ("this node lost its claim", ErrorCode::Internal),
    ("the sandbox ", ErrorCode::Internal),
    ("The code is empty", ErrorCode::Syntax),
    ("The input is not JavaScript", ErrorCode::Syntax),
    ("The input holds ", ErrorCode::Syntax),
    ("The code block is marked", ErrorCode::Syntax),
    ("`import` is not available", ErrorCode::Syntax),
    ("TypeScript could not be compiled", ErrorCode::Syntax),
    // Last: the forms above that begin the same way come first.
    ("The code is ", ErrorCode::Limit),
    ("the code is ", ErrorCode::Limit),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialise_in_screaming_snake_case_and_say_if_a_retry_may_help() {
        for code in ERROR_CODES {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().into()));
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
        let retryable: Vec<_> = ERROR_CODES.iter().filter(|c| c.retryable()).collect();
        assert_eq!(
            retryable,
            [
                &ErrorCode::Connector,
                &ErrorCode::Timeout,
                &ErrorCode::Internal
            ]
        );
    }

    #[test]
    fn a_message_the_host_threw_gives_its_code_to_the_uncaught_error_that_carries_it() {
        let thrown = vec![(ErrorCode::Connector, "tasks.add failed: quota".to_string())];
        let table = [
            (
                "Error: tasks.add failed: quota (line 2, column 3)",
                ErrorCode::Connector,
            ),
            ("Error: boom (line 1, column 7)", ErrorCode::Thrown),
            (
                "Uncaught \"no\" (throw an Error to get a line number)",
                ErrorCode::Thrown,
            ),
            ("Error: Memory limit: faked by the code", ErrorCode::Thrown),
            (
                "Memory limit: the code used more than 64 MiB",
                ErrorCode::Memory,
            ),
            (
                "SyntaxError: unexpected token (line 1, column 2)",
                ErrorCode::Syntax,
            ),
            (
                "ReferenceError: taks is not defined (line 1, column 1); did you mean tasks?",
                ErrorCode::NotFound,
            ),
            ("ReferenceError: x is not initialized", ErrorCode::Thrown),
            (
                "TypeError: a function at .f cannot leave the sandbox: x",
                ErrorCode::Unserializable,
            ),
            (
                "Error: connector t failed to start: sign in",
                ErrorCode::Unavailable,
            ),
        ];
        for (error, code) in table {
            assert_eq!(ErrorCode::of_error(error, &thrown), code, "{error}");
        }
    }

    #[test]
    fn host_throws_are_coded_by_where_they_came_from() {
        let table = [
            ("tasks", "add", true, "quota exceeded", ErrorCode::Connector),
            (
                "tasks",
                "add",
                true,
                "tasks.add did not answer within 50 ms",
                ErrorCode::Timeout,
            ),
            (
                "tasks",
                "add",
                false,
                "tasks.add: invalid input: x",
                ErrorCode::Schema,
            ),
            (
                "tasks",
                "ad",
                false,
                "tasks.ad is not a method of connector tasks",
                ErrorCode::NotFound,
            ),
            (
                "t",
                "x",
                false,
                "connector t failed to start: sign in",
                ErrorCode::Unavailable,
            ),
            (
                "codemode",
                "search",
                false,
                "codemode.search(query) needs a string query",
                ErrorCode::Schema,
            ),
            ("codemode", "step", true, "Error: boom", ErrorCode::Thrown),
        ];
        for (namespace, method, logged, message, code) in table {
            assert_eq!(
                ErrorCode::of_host_throw(namespace, method, logged, message),
                code,
                "{message}"
            );
        }
    }
}
