//! Which snippets a `codemode.run` call was made from, worked out from the engine's stack:
//! each snippet run is a script named after the chain it runs in, and the innermost such
//! script on the stack when `codemode.run` is called names the caller. Nothing the code holds
//! or passes takes part, so every path to `run` (an alias, `globalThis.codemode`, `eval`,
//! `Function`, the prototype's method) carries the chain, and the host refuses a repeat.
//!
//! A call made by a promise job whose callback is `run` itself (`.then(codemode.run)`) has no
//! frame of any script on the stack, and counts as made by the model's own code.

use rquickjs::Ctx;
use serde_json::Value;

use crate::normalize::CODE_FILE;

/// How a snippet run's script name starts; the chain follows, its names joined by
/// [`SEPARATOR`] (which no snippet name holds).
const PREFIX: &str = "snippet:";
/// Between two names of a chain.
const SEPARATOR: &str = ">";
/// The deepest stack frame looked at for the caller's script. The search stops at the first
/// script found (most often a frame or two below the call), and each level's walk ends where
/// the stack does, so only a call with no script below it pays for every level.
const MAX_FRAMES: isize = 1024;

/// The script name of a snippet run in `chain` (outermost first, the snippet itself last).
pub(crate) fn file_name(chain: &[String]) -> String {
    format!("{PREFIX}{}", chain.join(SEPARATOR))
}

/// The chain a script name stands for, if it is a snippet run's.
fn chain_of(file: &str) -> Option<Vec<String>> {
    let rest = file.strip_prefix(PREFIX)?;
    Some(rest.split(SEPARATOR).map(str::to_string).collect())
}

/// Sets `chain` in the arguments of a `codemode.run` call to the snippets the call was made
/// from (replacing whatever the code sent), and returns the chain the snippet would run in.
pub(crate) fn attach(ctx: &Ctx<'_>, args: &mut Value) -> Vec<String> {
    let mut chain = caller_chain(ctx);
    if let Value::Object(map) = args {
        map.insert(
            "chain".to_string(),
            Value::Array(chain.iter().cloned().map(Value::String).collect()),
        );
        if let Some(name) = map.get("name").and_then(Value::as_str) {
            chain.push(name.to_string());
        }
    }
    chain
}

/// The chain of the innermost script on the stack: a snippet run's, or none for the model's
/// own code (or when no script is found).
fn caller_chain(ctx: &Ctx<'_>) -> Vec<String> {
    // A native frame (the host function, a built-in calling back) names no script: go on.
    for level in 0..MAX_FRAMES {
        let Some(atom) = ctx.script_or_module_name(level) else {
            continue;
        };
        let Ok(file) = atom.to_string() else {
            continue;
        };
        if file == CODE_FILE {
            return Vec::new();
        }
        if let Some(chain) = chain_of(&file) {
            return chain;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_gives_its_chain_back() {
        let chain = vec!["top".to_string(), "mid.v2".to_string()];
        assert_eq!(file_name(&chain), "snippet:top>mid.v2");
        assert_eq!(chain_of(&file_name(&chain)), Some(chain));
        assert_eq!(chain_of("code.js"), None);
    }
}
