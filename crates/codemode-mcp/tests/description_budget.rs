//! The `codemode` tool's description over real MCP servers from npm (started as processes over
//! stdio) keeps to its default budget of 2,000 tokens: `@modelcontextprotocol/server-everything`
//! alone (whose declarations take more) and beside the filesystem and memory servers. Each
//! connector is declared whole or not at all, and those left out are named with how to read
//! them. Prints the sizes.

mod support;

use codemode::discovery::{estimated_tokens, Catalog, ConnectorInfo, DEFAULT_DESCRIPTION_TOKENS};
use codemode::{Connector, ToolSpec};

/// (connector name, program in `fixtures/node_modules/.bin`, its arguments; `{root}` is a
/// fresh folder the server may use).
const SERVERS: &[(&str, &str, &[&str])] = &[
    ("everything", "mcp-server-everything", &["stdio"]),
    ("filesystem", "mcp-server-filesystem", &["{root}"]),
    ("memory", "mcp-server-memory", &[]),
];

/// Whether every tool of `tools` is declared in `text` (`Some(true)`), none is
/// (`Some(false)`), or only some are (`None`).
fn declared(text: &str, tools: &[ToolSpec]) -> Option<bool> {
    let found = tools
        .iter()
        .filter(|t| text.contains(&format!("\n  {}(", t.name)))
        .count();
    match found {
        0 => Some(false),
        n if n == tools.len() => Some(true),
        _ => None,
    }
}

/// Prints the description's size beside the size it would have with every declaration.
fn report(what: &str, catalog: &Catalog, description: &str) {
    let whole = catalog.tool_description_within(usize::MAX);
    eprintln!(
        "tool description over {what}: {} chars, ~{} tokens (budget {DEFAULT_DESCRIPTION_TOKENS}); with every declaration: {} chars, ~{} tokens",
        description.chars().count(),
        estimated_tokens(description),
        whole.chars().count(),
        estimated_tokens(&whole),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_description_keeps_to_its_budget_and_names_what_is_left_out() {
    let root = tempfile::tempdir().unwrap();
    let Some(connectors) = support::start_npm_servers(SERVERS, root.path()).await else {
        return;
    };
    // What a runtime's catalogue holds of each (its instructions head its declarations).
    let infos: Vec<ConnectorInfo> = connectors
        .iter()
        .map(|c| ConnectorInfo {
            instructions: c.instructions(),
            positional: c.positional_args(),
            types: c.types(),
            ..ConnectorInfo::new(c.name(), c.tools())
        })
        .collect();

    // server-everything alone.
    let everything = &infos[0];
    let alone = Catalog::new(vec![everything.clone()]).unwrap();
    let description = alone.tool_description();
    report("server-everything alone", &alone, &description);
    assert!(estimated_tokens(&description) <= DEFAULT_DESCRIPTION_TOKENS);
    let count = everything.tools.len();
    assert!(
        description.contains(&format!("- everything ({count} methods)")),
        "{description}"
    );
    // Its declarations, headed by the server's instructions, take more than the budget.
    assert!(
        estimated_tokens(&alone.tool_description_within(usize::MAX)) > DEFAULT_DESCRIPTION_TOKENS,
        "server-everything's declarations now fit the budget; this part no longer shows a connector left out"
    );
    assert_eq!(
        declared(&description, &everything.tools),
        Some(false),
        "{description}"
    );
    assert!(
        description.contains(
            "Not declared here, to keep this description short: the methods of everything. Discover them from your code: codemode.describe(\"everything\")"
        ),
        "the description does not name what was left out:\n{description}"
    );

    // Beside the filesystem and memory servers: not everything fits.
    let all = Catalog::new(infos.clone()).unwrap();
    let description = all.tool_description();
    report(
        "server-everything, filesystem and memory",
        &all,
        &description,
    );
    assert!(
        estimated_tokens(&description) <= DEFAULT_DESCRIPTION_TOKENS,
        "{description}"
    );
    let mut left_out = Vec::new();
    for info in &infos {
        let n = info.tools.len();
        assert!(
            description.contains(&format!("- {} ({n} methods)", info.name)),
            "{} is not listed with its count:\n{description}",
            info.name
        );
        match declared(&description, &info.tools) {
            Some(true) => {}
            Some(false) => left_out.push(info.name.as_str()),
            None => panic!("{} is declared in part:\n{description}", info.name),
        }
    }
    eprintln!("left out: {left_out:?}");
    assert!(
        !left_out.is_empty(),
        "every declaration now fits; this test no longer shows a connector left out"
    );
    let note = format!(
        "Not declared here, to keep this description short: the methods of {}. Discover them from your code: codemode.describe({:?})",
        left_out.join(", "),
        left_out[0]
    );
    assert!(
        description.contains(&note),
        "the description does not name what was left out ({note:?}):\n{description}"
    );
    for connector in &connectors {
        connector.shutdown().await;
    }
}
