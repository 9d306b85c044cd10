//! The `codemode` tool's description over the real `@modelcontextprotocol/server-everything`
//! (started as a process over stdio) keeps to its default budget of 2,000 tokens: the server's
//! declarations, whole, do not fit, so they are left out and the description names them with
//! how to read them; a small connector beside it is still declared whole.

mod support;

use codemode::discovery::{estimated_tokens, Catalog, ConnectorInfo, DEFAULT_DESCRIPTION_TOKENS};
use codemode::{Connector, ToolSpec};
use codemode_mcp::{McpConfig, McpConnector, McpTransport};

#[tokio::test]
async fn the_description_of_server_everything_fits_its_budget_and_names_what_is_left_out() {
    let Some(bin) = support::everything() else {
        return;
    };
    let everything = McpConnector::connect(McpConfig::new(
        "everything",
        McpTransport::stdio(bin, ["stdio"]),
    ))
    .await
    .expect("server-everything starts and lists its tools");
    let tools = everything.tools();
    let count = tools.len();
    assert!(count >= 5, "server-everything lists {count} tools");

    let alone = Catalog::new(vec![ConnectorInfo::new("everything", tools.clone())]).unwrap();
    let description = alone.tool_description();
    let whole = alone.tool_description_within(usize::MAX);
    eprintln!(
        "tool description over server-everything ({count} tools): {} chars, ~{} tokens (budget {DEFAULT_DESCRIPTION_TOKENS}); with every declaration it would be {} chars, ~{} tokens",
        description.chars().count(),
        estimated_tokens(&description),
        whole.chars().count(),
        estimated_tokens(&whole),
    );
    assert!(
        estimated_tokens(&description) <= DEFAULT_DESCRIPTION_TOKENS,
        "{description}"
    );
    assert!(
        estimated_tokens(&whole) > DEFAULT_DESCRIPTION_TOKENS,
        "server-everything's declarations now fit the budget; this test no longer shows a connector left out"
    );
    assert!(
        description.contains(&format!("- everything ({count} methods)")),
        "{description}"
    );
    assert!(
        description.contains("the methods of everything.")
            && description.contains(r#"codemode.describe("everything")"#),
        "the description does not name what was left out:\n{description}"
    );
    for tool in &tools {
        assert!(
            !description.contains(&format!("  {}(", tool.name)),
            "{} is declared although its connector was left out:\n{description}",
            tool.name
        );
    }

    // A small connector beside it is declared whole; server-everything is still left out.
    let notes = ConnectorInfo::new(
        "notes",
        vec![ToolSpec::new("add_note"), ToolSpec::new("list_notes")],
    );
    let both = Catalog::new(vec![ConnectorInfo::new("everything", tools), notes]).unwrap();
    let description = both.tool_description();
    eprintln!(
        "with a two-method connector beside it: {} chars, ~{} tokens",
        description.chars().count(),
        estimated_tokens(&description)
    );
    assert!(estimated_tokens(&description) <= DEFAULT_DESCRIPTION_TOKENS);
    assert!(
        description.contains("Declarations of the methods of notes (")
            && description.contains("  add_note(")
            && description.contains("  list_notes("),
        "{description}"
    );
    assert!(
        description.contains("the methods of everything."),
        "{description}"
    );
    everything.shutdown().await;
}
