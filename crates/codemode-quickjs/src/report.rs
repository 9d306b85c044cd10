//! Turning what the sandbox threw into a message the model can act on.

use rquickjs::{Ctx, Exception, Object, Type, Value};

use crate::normalize::{Normalized, CODE_FILE};
use crate::options::QuickJsOptions;

/// The position of the first frame of the model's code in a QuickJS stack trace.
fn first_position(stack: &str) -> Option<(usize, usize)> {
    let needle = format!("{CODE_FILE}:");
    let at = stack.find(&needle)? + needle.len();
    let mut parts = stack[at..].splitn(3, |c: char| !c.is_ascii_digit());
    let line = parts.next()?.parse().ok()?;
    let column = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    Some((line, column))
}

fn get_string<'js>(object: &Object<'js>, key: &str) -> Option<String> {
    object
        .get::<_, Value<'js>>(key)
        .ok()
        .and_then(|v| v.as_string().and_then(|s| s.to_string().ok()))
}

/// What the code threw, taken from `ctx`. A built-in that fails without making an error (the
/// engine's own allocation failed too) leaves no value at all; the code then gets an `Error`
/// that says so instead of the engine's internal placeholder.
pub fn take_thrown<'js>(ctx: &Ctx<'js>) -> Value<'js> {
    let thrown = ctx.catch();
    if thrown.type_of() != Type::Uninitialized {
        return thrown;
    }
    Exception::from_message(ctx.clone(), NO_ERROR_VALUE)
        .map(Exception::into_value)
        .unwrap_or_else(|_| Value::new_null(ctx.clone()))
}

/// The message of the error that stands in for a failure that left no error value.
const NO_ERROR_VALUE: &str = "a built-in failed without an error value (the engine could not make one, most often for want of memory); work on smaller pieces of data";

/// The names the model can use, for the ReferenceError help.
pub fn globals_help(namespaces: &[String]) -> String {
    let mut names: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    names.push(codemode::SDK_NAMESPACE);
    names.push("console");
    format!(
        "the only globals available in the sandbox are: {} (and the standard JavaScript built-ins such as JSON, Math, Date, Promise); there is no fetch, require, process or file system",
        names.join(", ")
    )
}

/// The connector (or `codemode`) closest to a name that is not defined, if one is close:
/// compared in lower case without `_`, within a third of the longer name's length.
fn closest_global<'a>(unknown: &str, namespaces: &'a [String]) -> Option<&'a str> {
    let fold = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| *c != '_')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let wanted = fold(unknown);
    namespaces
        .iter()
        .map(String::as_str)
        .chain([codemode::SDK_NAMESPACE])
        .filter_map(|name| {
            let folded = fold(name);
            let limit = (wanted.len().max(folded.len()) / 3).max(1);
            let d = edit_distance(&wanted, &folded);
            (d <= limit).then_some((d, name))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Levenshtein distance between two character sequences.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            row.push(
                (previous[j + 1] + 1)
                    .min(row[j] + 1)
                    .min(previous[j] + cost),
            );
        }
        previous = row;
    }
    previous[b.len()]
}

/// Describes a thrown or rejected value.
pub fn describe<'js>(
    ctx: &Ctx<'js>,
    thrown: &Value<'js>,
    show: Option<&rquickjs::Function<'js>>,
    normalized: &Normalized,
    namespaces: &[String],
    options: &QuickJsOptions,
) -> String {
    let Some(object) = thrown.as_object().filter(|_| thrown.is_error()) else {
        let shown = show
            .and_then(|f| f.call::<_, String>((thrown.clone(),)).ok())
            .unwrap_or_else(|| "a non-Error value".to_string());
        let _ = ctx;
        let shown = match shown.char_indices().nth(MAX_SHOWN_CHARS) {
            Some((at, _)) => format!(
                "{}… ({} characters in all)",
                &shown[..at],
                shown.chars().count()
            ),
            None => shown,
        };
        return format!("Uncaught {shown} (throw an Error to get a line number)");
    };
    let name = get_string(object, "name").unwrap_or_else(|| "Error".to_string());
    let message = get_string(object, "message").unwrap_or_default();
    let stack = get_string(object, "stack").unwrap_or_default();
    let position = first_position(&stack)
        .map(|(l, c)| normalized.original_position(l, c))
        .map(|(l, c)| format!(" (line {l}, column {c})"))
        .unwrap_or_default();
    if message == "out of memory" {
        return format!(
            "Memory limit: the code used more than {} MiB{position}. Work on smaller pieces of data, or ask the connectors to filter and page their results.",
            options.memory_limit / (1024 * 1024)
        );
    }
    if message.contains("stack size exceeded") || message.contains("stack overflow") {
        return format!(
            "Stack limit: {name}: {message}{position}. The sandbox stack is {} KiB; recursion this deep is not possible, use a loop instead.",
            options.max_stack_size / 1024
        );
    }
    if name == "ReferenceError" {
        let help = globals_help(namespaces);
        let guess = message
            .strip_suffix(" is not defined")
            .and_then(|unknown| closest_global(unknown, namespaces));
        return match guess {
            Some(g) => format!("{name}: {message}{position}; did you mean {g}? {help}"),
            None => format!("{name}: {message}{position}; {help}"),
        };
    }
    if name == "TypeError"
        && message.starts_with("cannot read property ")
        && (message.ends_with(" of undefined") || message.ends_with(" of null"))
    {
        return format!("{name}: {message}{position}; {UNDEFINED_HELP}");
    }
    format!("{name}: {message}{position}")
}

/// The most characters of a thrown value that is not an `Error` the message shows.
const MAX_SHOWN_CHARS: usize = 1_000;

/// What a read of a property of `undefined` most often means in model code.
const UNDEFINED_HELP: &str = "the value before it is undefined: check the field name against the type codemode.describe(\"connector.method\") shows, and that every connector call is awaited";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undefined_name_close_to_a_connector_names_it() {
        let names = vec!["tasks".to_string(), "state".to_string()];
        assert_eq!(closest_global("task", &names), Some("tasks"));
        assert_eq!(closest_global("Tasks", &names), Some("tasks"));
        assert_eq!(closest_global("codeMode", &names), Some("codemode"));
        assert_eq!(closest_global("result", &names), None);
        assert_eq!(closest_global("x", &names), None);
    }

    #[test]
    fn finds_the_first_frame_of_the_model_code() {
        let stack = "    at f (glue.js:1:2)\n    at <anonymous> (code.js:3:14)\n";
        assert_eq!(first_position(stack), Some((3, 14)));
        assert_eq!(first_position("no frames"), None);
    }

    #[test]
    fn an_empty_exception_slot_becomes_an_error_that_says_so() {
        let runtime = rquickjs::Runtime::new().unwrap();
        let context = rquickjs::Context::full(&runtime).unwrap();
        context.with(|ctx| {
            // Nothing thrown: the engine's slot holds its `uninitialized` placeholder.
            let thrown = take_thrown(&ctx);
            assert!(thrown.is_error(), "{thrown:?}");
            let message: String = thrown.as_object().unwrap().get("message").unwrap();
            assert!(message.contains("without an error value"), "{message}");
            // A value that was thrown comes back as it was.
            let _ = ctx.eval::<(), _>("throw 7");
            assert_eq!(take_thrown(&ctx).as_int(), Some(7));
        });
    }
}
