//! The `codemode` tool as the model sees it: its description and input schema.

use super::catalog::Catalog;
use super::doc_comment::clip;
use super::names::is_valid_identifier;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The name of the one tool the model is given.
pub const TOOL_NAME: &str = "codemode";
/// Longest connector hint shown in the tool description, in characters.
const MAX_HINT_CHARS: usize = 160;
/// Largest declarations of all connectors put in the tool description (2,000 tokens at four
/// characters a token); larger ones are found with search and describe instead.
pub const INLINE_DECLARATIONS_CHARS: usize = 8_000;

/// A tool definition ready to hand to any LLM API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// Always `codemode`.
    pub name: String,
    /// What the model reads before it writes code.
    pub description: String,
    /// JSON Schema of the input: `{ code: string }`.
    pub input_schema: Value,
}

const INTRO: &str = "Run JavaScript or TypeScript in a sandbox to use the connectors below. \
`code` is an async arrow function; what it returns is the result, so return only what you need. \
console.log output comes back too. There is no network or file system: connectors are the only way out.

Example:
async () => {
  const found = await codemode.search(\"create issue comment\");
  const docs = await codemode.describe(found.results[0].path);
  return { found: found.results.slice(0, 5), types: docs.types };
}
";

const INLINE_HEADER: &str = "
Declarations of every connector method (call them directly; no need to search or describe):
";

const INLINE_DISCOVERY: &str = "
The declarations above are complete; search and describe are there if you need them.";

const GUIDE_DISCOVERY: &str = "
Methods are not listed here: discover them from your code.";

/// Where [`GUIDE`] shows a call of a method of the catalogue ([`Catalog::example_call`]).
const EXAMPLE_CALL: &str = "EXAMPLE_CALL";

const GUIDE: &str = "
Methods are not listed here: discover them from your code.
- codemode.search(query) -> { results: [{ path, description, kind, requiresApproval, score }], total, truncated }: ranked methods and saved snippets for a few words.
- codemode.describe(target) -> { path, description, types }: TypeScript declarations for a connector, \"connector.method\", or a snippet. Read the input type before calling a method.
- Call a method as connector.method(input), e.g. EXAMPLE_CALL; each takes one object and returns a promise.
- Saved snippets (kind \"snippet\") run with await codemode.run(path, input).
A first run can search and describe; the next one calls the methods it found.

Approvals: a call with requiresApproval pauses the run until a person approves it. The run then resumes by running your code again from the start, replaying the results already recorded. So:
- Promise.all is fine for independent calls: results are replayed in the order they first arrived;
- keep the code deterministic: wrap Date.now(), Math.random() and anything else that varies in codemode.step(\"name\", () => value), which records the value once and replays it;
- do not catch a connector error only to hide it.
A run that comes back paused (or still running) is picked up by calling this tool again with { executionId } instead of code: it waits for the decision and returns the outcome. Never resend the code.
";

impl Catalog {
    /// What the model reads: how to write the code, the connectors with their hints, how to
    /// discover methods, and how approvals and replay work. Its size does not depend on the
    /// number of methods.
    pub fn tool_description(&self) -> String {
        let mut out = String::from(INTRO);
        out.push_str("\nConnectors (globals):\n");
        if self.connectors.is_empty() && self.unavailable.is_empty() {
            out.push_str("- none configured\n");
        }
        for (c, connector) in self.connectors.iter().enumerate() {
            let count = self.methods.iter().filter(|m| m.connector == c).count();
            let plural = if count == 1 { "" } else { "s" };
            out.push_str(&format!("- {} ({count} method{plural})", connector.name));
            let hint = connector
                .hint
                .as_deref()
                .and_then(|h| h.lines().map(str::trim).find(|l| !l.is_empty()));
            if let Some(hint) = hint {
                out.push_str(": ");
                out.push_str(&clip(hint, MAX_HINT_CHARS));
            }
            out.push('\n');
        }
        for (name, reason) in &self.unavailable {
            out.push_str(&format!(
                "- {name}: unavailable, it failed to start ({}); every call on it throws\n",
                clip(reason, MAX_HINT_CHARS)
            ));
        }
        let guide = GUIDE.replacen(EXAMPLE_CALL, &self.example_call(), 1);
        match self.inline_declarations() {
            Some(types) => {
                out.push_str(INLINE_HEADER);
                out.push_str(&types);
                out.push_str(&guide.replacen(GUIDE_DISCOVERY, INLINE_DISCOVERY, 1));
            }
            None => out.push_str(&guide),
        }
        out
    }

    /// One call of a method that exists in this catalogue, as the description shows it: a
    /// read-only method if there is one (else the first), with up to two of its required
    /// input fields (`await tasks.list_tasks({ status })`).
    pub fn example_call(&self) -> String {
        let tool_of = |m: &super::catalog::MethodEntry| &self.connectors[m.connector].tools[m.tool];
        let Some(method) = self
            .methods
            .iter()
            .find(|m| tool_of(m).read_only)
            .or_else(|| self.methods.first())
        else {
            return "await connector.method({ field })".to_string();
        };
        let tool = tool_of(method);
        let required: Vec<&str> = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .filter(|n| is_valid_identifier(n))
                    .take(2)
                    .collect()
            })
            .unwrap_or_default();
        let args = if self.connectors[method.connector].positional {
            required.join(", ")
        } else if required.is_empty() {
            "{}".to_string()
        } else {
            format!("{{ {} }}", required.join(", "))
        };
        format!("await {}({args})", method.path)
    }

    /// Every connector's declarations when together they fit [`INLINE_DECLARATIONS_CHARS`].
    fn inline_declarations(&self) -> Option<String> {
        let mut out = String::new();
        for c in 0..self.connectors.len() {
            let methods: Vec<_> = self.methods.iter().filter(|m| m.connector == c).collect();
            if methods.len() * 40 > INLINE_DECLARATIONS_CHARS {
                return None;
            }
            out.push_str(
                &self
                    .connector_types(c, &methods, false, super::describe::OutputTypes::Whole)
                    .0,
            );
            if out.chars().count() > INLINE_DECLARATIONS_CHARS {
                return None;
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The `codemode` tool: name, description and input schema.
    pub fn tool_definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: TOOL_NAME.to_string(),
            description: self.tool_description(),
            input_schema: code_input_schema(),
        }
    }
}

/// The input schema of the `codemode` tool: one required string, `code`.
pub fn code_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "An async arrow function in JavaScript or TypeScript, e.g. async () => { return await codemode.search(\"pull requests\"); }"
            }
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connector::ToolSpec;
    use crate::discovery::ConnectorInfo;

    fn catalog(methods: usize) -> Catalog {
        let tools = (0..methods)
            .map(|i| ToolSpec::new(format!("method_{i}")))
            .collect();
        let mut github = ConnectorInfo::new("github", tools);
        github.hint = Some("GitHub REST API\nsecond line is dropped".to_string());
        Catalog::new(vec![github, ConnectorInfo::new("slack", vec![])]).unwrap()
    }

    #[test]
    fn description_names_connectors_and_explains_discovery() {
        let text = catalog(2).tool_description();
        for needle in [
            "async arrow function",
            "- github (2 methods): GitHub REST API\n",
            "- slack (0 methods)",
            "codemode.search",
            "codemode.describe",
            "Promise.all",
            "codemode.step",
            "Date.now()",
            "Math.random()",
            "requiresApproval",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
        assert!(!text.contains("second line"));
    }

    #[test]
    fn description_size_does_not_grow_with_methods() {
        let small = catalog(300).tool_description().len();
        let large = catalog(5_000).tool_description().len();
        assert!(large <= small + 4, "{small} vs {large}");
        assert!(large <= 4_000);
    }

    #[test]
    fn small_catalogues_inline_their_declarations_large_ones_do_not() {
        let small = catalog(3).tool_description();
        assert!(
            small.contains("Declarations of every connector method"),
            "{small}"
        );
        assert!(
            small.contains("method_2(input?: Method2Input): Promise<unknown>;"),
            "{small}"
        );
        assert!(!small.contains("Methods are not listed here"));
        let large = catalog(400).tool_description();
        assert!(!large.contains("Declarations of every connector method"));
        assert!(large.contains("Methods are not listed here"));
        let larger = catalog(5_000).tool_description();
        assert_eq!(large.len() + 1, larger.len(), "only the method count grows");
        assert!(small.len() <= INTRO.len() + GUIDE.len() + INLINE_DECLARATIONS_CHARS + 500);
    }

    #[test]
    fn definition_serialises_for_llm_apis() {
        let def = catalog(1).tool_definition();
        let value = serde_json::to_value(&def).unwrap();
        assert_eq!(value["name"], "codemode");
        assert_eq!(
            value["inputSchema"]["required"],
            serde_json::json!(["code"])
        );
        assert_eq!(value["inputSchema"]["properties"]["code"]["type"], "string");
    }
}
