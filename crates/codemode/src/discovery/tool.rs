//! The `codemode` tool as the model sees it: its description and input schema.

use super::catalog::{Catalog, MethodEntry};
use super::describe::OutputTypes;
use super::doc_comment::clip;
use super::names::is_valid_identifier;
use crate::value::CHARS_PER_TOKEN;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The name of the one tool the model is given.
pub const TOOL_NAME: &str = "codemode";
/// Longest connector hint shown in the tool description, in characters.
const MAX_HINT_CHARS: usize = 160;
/// The token budget of the generated tool description when the host sets none: the
/// connectors' declarations are put in only while the whole description fits it.
pub const DEFAULT_DESCRIPTION_TOKENS: usize = 2_000;
/// Fewest characters one method's declaration takes: a connector with more methods than the
/// room left allows is left out without generating its declarations.
const MIN_DECLARATION_CHARS: usize = 20;
/// Characters the layout around the declarations may shrink by when one more connector is
/// put in, besides twice its name (which leaves the note of those left out, and may stop being
/// that note's example): added to the room for the checks that skip a connector before the
/// whole text is measured, so that they never skip one that would fit.
const LAYOUT_SLACK_CHARS: usize = 400;

/// Tokens a text is estimated to cost: [`CHARS_PER_TOKEN`] characters a token, rounded up, the
/// estimate result budgets use too.
pub fn estimated_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN)
}

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
    /// What the model reads, within [`DEFAULT_DESCRIPTION_TOKENS`]; see
    /// [`Catalog::tool_description_within`].
    pub fn tool_description(&self) -> String {
        self.tool_description_within(DEFAULT_DESCRIPTION_TOKENS)
    }

    /// What the model reads: how to write the code, every connector with its method count and
    /// hint, how to discover methods, and how approvals and replay work. Declarations are put
    /// in connector by connector, in configuration order, each whole or not at all, while the
    /// whole description stays within `max_tokens` (estimated by [`estimated_tokens`]); the
    /// connectors left out are named with how to read their declarations. The rest of the
    /// text is always there, so a budget smaller than it inlines nothing; its size does not
    /// grow with the number of methods.
    pub fn tool_description_within(&self, max_tokens: usize) -> String {
        let head = self.description_head();
        let guide = GUIDE.replacen(EXAMPLE_CALL, &self.example_call(), 1);
        let mut inlined: Vec<(usize, String)> = Vec::new();
        let mut left_out: Vec<usize> = (0..self.connectors.len())
            .filter(|&c| self.methods_of(c).next().is_some())
            .collect();
        let mut best = self.assemble(&head, &guide, &inlined, &left_out);
        let budget_chars = max_tokens.saturating_mul(CHARS_PER_TOKEN);
        for c in left_out.clone() {
            let methods: Vec<&MethodEntry> = self.methods_of(c).collect();
            let room = budget_chars.saturating_sub(best.chars().count())
                + LAYOUT_SLACK_CHARS
                + 2 * self.connectors[c].name.chars().count();
            let generated = self.connectors[c].types.is_none();
            if generated && methods.len().saturating_mul(MIN_DECLARATION_CHARS) > room {
                continue;
            }
            let types = self
                .connector_types(c, &methods, false, OutputTypes::Whole)
                .0;
            if types.chars().count() > room {
                continue;
            }
            let mut with: Vec<(usize, String)> = inlined.clone();
            with.push((c, types));
            let without: Vec<usize> = left_out.iter().copied().filter(|&o| o != c).collect();
            let text = self.assemble(&head, &guide, &with, &without);
            if estimated_tokens(&text) <= max_tokens {
                (inlined, left_out, best) = (with, without, text);
            }
        }
        best
    }

    /// The methods of connector `c`, in its order.
    fn methods_of(&self, c: usize) -> impl Iterator<Item = &MethodEntry> {
        self.methods.iter().filter(move |m| m.connector == c)
    }

    /// The introduction and the connector list.
    fn description_head(&self) -> String {
        let mut out = String::from(INTRO);
        out.push_str("\nConnectors (globals):\n");
        if self.connectors.is_empty() && self.unavailable.is_empty() {
            out.push_str("- none configured\n");
        }
        for (c, connector) in self.connectors.iter().enumerate() {
            let count = self.methods_of(c).count();
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
        out
    }

    /// The description with the declarations of `inlined` (connector, declarations) and a
    /// note naming the connectors `left_out`.
    fn assemble(
        &self,
        head: &str,
        guide: &str,
        inlined: &[(usize, String)],
        left_out: &[usize],
    ) -> String {
        let names = |cs: &mut dyn Iterator<Item = usize>| {
            cs.map(|c| self.connectors[c].name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = String::from(head);
        if !inlined.is_empty() {
            if left_out.is_empty() {
                out.push_str(INLINE_HEADER);
            } else {
                out.push_str(&format!(
                    "\nDeclarations of the methods of {} (call them directly; no need to search or describe):\n",
                    names(&mut inlined.iter().map(|(c, _)| *c))
                ));
            }
            for (_, types) in inlined {
                out.push_str(types);
            }
        }
        let discovery = match (inlined.is_empty(), left_out.first()) {
            (false, None) => INLINE_DISCOVERY.to_string(),
            (true, None) => GUIDE_DISCOVERY.to_string(),
            (_, Some(&first)) => format!(
                "\nNot declared here, to keep this description short: the methods of {}. Discover them from your code: codemode.describe({:?}) declares a connector's methods.",
                names(&mut left_out.iter().copied()),
                self.connectors[first].name
            ),
        };
        out.push_str(&guide.replacen(GUIDE_DISCOVERY, &discovery, 1));
        out
    }

    /// One call of a method that exists in this catalogue, as the description shows it: a
    /// read-only method if there is one (else the first), with up to two of its required
    /// input fields (`await tasks.list_tasks({ status })`).
    pub fn example_call(&self) -> String {
        let tool_of = |m: &MethodEntry| &self.connectors[m.connector].tools[m.tool];
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

    /// The `codemode` tool: name, description (within [`DEFAULT_DESCRIPTION_TOKENS`]) and
    /// input schema.
    pub fn tool_definition(&self) -> ToolDefinition {
        self.tool_definition_within(DEFAULT_DESCRIPTION_TOKENS)
    }

    /// The `codemode` tool with its description within `max_tokens`.
    pub fn tool_definition_within(&self, max_tokens: usize) -> ToolDefinition {
        ToolDefinition {
            name: TOOL_NAME.to_string(),
            description: self.tool_description_within(max_tokens),
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
        assert!(!small.contains("Not declared here"), "{small}");
        assert!(estimated_tokens(&small) <= DEFAULT_DESCRIPTION_TOKENS);
        let large = catalog(400).tool_description();
        assert!(!large.contains("Declarations of"), "{large}");
        assert!(
            large.contains("Not declared here, to keep this description short: the methods of github. Discover them from your code: codemode.describe(\"github\")"),
            "{large}"
        );
        let larger = catalog(5_000).tool_description();
        assert_eq!(large.len() + 1, larger.len(), "only the method count grows");
    }

    /// A connector `name` of `methods` methods, each with a description and `fields` input
    /// fields (so its declarations grow with both).
    fn sized(name: &str, methods: usize, fields: usize) -> ConnectorInfo {
        let tools = (0..methods)
            .map(|i| {
                let properties: serde_json::Map<String, Value> = (0..fields)
                    .map(|f| {
                        let field = json!({ "type": "string", "description": format!("Field {f} of the request.") });
                        (format!("field_{f}"), field)
                    })
                    .collect();
                ToolSpec {
                    description: Some(format!("Does thing {i} of {name}.")),
                    input_schema: json!({ "type": "object", "properties": properties }),
                    ..ToolSpec::new(format!("{name}_method_{i}"))
                }
            })
            .collect();
        ConnectorInfo::new(name, tools)
    }

    /// Whether every method of `connector` is declared in `text` (`Some(true)`), none is
    /// (`Some(false)`), or only some are (`None`: a partial declaration).
    fn declared(text: &str, connector: &ConnectorInfo) -> Option<bool> {
        let found = connector
            .tools
            .iter()
            .filter(|t| text.contains(&format!("  {}(input?: ", t.name)))
            .count();
        match found {
            0 => Some(false),
            n if n == connector.tools.len() => Some(true),
            _ => None,
        }
    }

    #[test]
    fn declarations_are_inlined_connector_by_connector_within_the_budget() {
        let connectors = vec![
            sized("tiny", 2, 1),
            sized("huge", 300, 6),
            sized("medium", 8, 2),
            sized("wide", 20, 12),
            sized("small", 4, 2),
        ];
        let catalog = Catalog::new(connectors.clone()).unwrap();
        let text = catalog.tool_description();
        let tokens = estimated_tokens(&text);
        assert!(
            tokens <= DEFAULT_DESCRIPTION_TOKENS,
            "{tokens} tokens:\n{text}"
        );
        for (connector, count) in [
            ("tiny", 2),
            ("huge", 300),
            ("medium", 8),
            ("wide", 20),
            ("small", 4),
        ] {
            assert!(
                text.contains(&format!("- {connector} ({count} methods)\n")),
                "{connector}:\n{text}"
            );
        }
        let inlined: Vec<&str> = connectors
            .iter()
            .filter(|c| {
                declared(&text, c)
                    .unwrap_or_else(|| panic!("{} is declared in part:\n{text}", c.name))
            })
            .map(|c| c.name.as_str())
            .collect();
        // The huge and the wide connector do not fit; the small one after them still does.
        assert_eq!(inlined, ["tiny", "medium", "small"], "{text}");
        assert!(
            text.contains("Declarations of the methods of tiny, medium, small (call them directly"),
            "{text}"
        );
        assert!(
            text.contains("Not declared here, to keep this description short: the methods of huge, wide. Discover them from your code: codemode.describe(\"huge\")"),
            "{text}"
        );

        // A budget for everything declares every connector; a budget under the text around the
        // declarations declares none and still names them all.
        let all = catalog.tool_description_within(100_000);
        assert!(connectors.iter().all(|c| declared(&all, c) == Some(true)));
        assert!(
            all.contains("Declarations of every connector method"),
            "{all}"
        );
        assert!(!all.contains("Not declared here"));
        let none = catalog.tool_description_within(100);
        assert!(connectors.iter().all(|c| declared(&none, c) == Some(false)));
        assert!(
            none.contains("the methods of tiny, huge, medium, wide, small."),
            "{none}"
        );
        // Each budget between them declares whole connectors only, and stays within it once
        // anything is declared.
        for budget in (600..3_000).step_by(50) {
            let text = catalog.tool_description_within(budget);
            let inlined = connectors
                .iter()
                .filter(|c| declared(&text, c).expect("whole or absent"))
                .count();
            if inlined > 0 {
                assert!(estimated_tokens(&text) <= budget, "{budget}");
            }
        }
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
