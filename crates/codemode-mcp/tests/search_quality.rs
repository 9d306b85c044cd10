//! Search quality over four real MCP servers from npm, started as processes and listed over
//! stdio: a hundred requests in a model's words (`support/search_cases.rs`), each with the
//! method it means. Prints top-1 and top-3 beside the GitHub figures (the core's 100 queries
//! over `@octokit/openapi`) and asserts floors a little under what search reaches.

#[path = "../../codemode/tests/support/github.rs"]
mod github;
#[path = "../../codemode/tests/support/github_queries.rs"]
mod github_queries;
#[path = "support/search_cases.rs"]
mod search_cases;
mod support;

use codemode::discovery::{Catalog, ConnectorInfo};
use codemode::Connector;
use codemode_mcp::{EnvValue, McpConfig, McpConnector, McpTransport};
use search_cases::MCP_CASES;
use std::collections::BTreeMap;
use std::path::Path;

/// Top-1 share the test requires over the MCP servers (it prints what it reached).
const MCP_TOP1_FLOOR: f64 = 0.85;
/// Top-3 share the test requires over the MCP servers.
const MCP_TOP3_FLOOR: f64 = 0.92;

/// (connector name, program in `fixtures/node_modules/.bin`, its arguments; `{root}` is a
/// fresh folder the server may use).
const SERVERS: &[(&str, &str, &[&str])] = &[
    ("everything", "mcp-server-everything", &["stdio"]),
    ("filesystem", "mcp-server-filesystem", &["{root}"]),
    ("memory", "mcp-server-memory", &[]),
    ("browser", "playwright-mcp", &["--headless", "--isolated"]),
];

/// Starts one server over stdio, with its files kept in `root`.
async fn start(name: &str, program: &Path, args: &[&str], root: &Path) -> McpConnector {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{root}", &root.to_string_lossy()))
        .collect();
    let mut env = BTreeMap::new();
    let memory_file = root.join("memory.jsonl");
    env.insert(
        "MEMORY_FILE_PATH".to_string(),
        EnvValue::Literal(memory_file.to_string_lossy().into_owned()),
    );
    let transport = McpTransport::Stdio {
        command: program.to_string_lossy().into_owned(),
        args,
        env,
        cwd: Some(root.to_path_buf()),
    };
    McpConnector::connect(McpConfig::new(name, transport))
        .await
        .unwrap_or_else(|e| panic!("{name} starts and lists its tools: {e}"))
}

/// Top-1 and top-3 hits of `cases` (queries and the paths they mean), and the misses.
fn score(catalog: &Catalog, cases: &[(&str, String)]) -> (usize, usize, Vec<String>) {
    let (mut top1, mut top3) = (0, 0);
    let mut misses = Vec::new();
    for (query, meant) in cases {
        let out = catalog.search(query, &[]);
        let rank = out.results.iter().position(|r| &r.path == meant);
        top1 += usize::from(rank == Some(0));
        top3 += usize::from(rank.is_some_and(|r| r < 3));
        if rank != Some(0) {
            let got: Vec<&str> = out
                .results
                .iter()
                .take(3)
                .map(|r| r.path.as_str())
                .collect();
            misses.push(format!("{query:?} -> {meant} at {rank:?}; top: {got:?}"));
        }
    }
    (top1, top3, misses)
}

/// The GitHub figures, to print beside the MCP ones (`None` when the spec is not installed).
fn github_figures() -> Option<(usize, usize)> {
    let spec = github::load_github_spec()?;
    let catalog = Catalog::new(vec![github::github_connector(&spec)]).expect("GitHub builds");
    let cases: Vec<(&str, String)> = github_queries::GITHUB_CASES
        .iter()
        .map(|(q, m)| (*q, format!("github.{m}")))
        .collect();
    let (top1, top3, _) = score(&catalog, &cases);
    Some((top1, top3))
}

#[tokio::test(flavor = "multi_thread")]
async fn hundred_requests_over_four_real_servers_find_what_was_meant() {
    let mut programs = Vec::new();
    for (name, bin, args) in SERVERS {
        let Some(program) = codemode_testkit::npm_bin(bin) else {
            return;
        };
        programs.push((*name, program, *args));
    }
    let root = tempfile::tempdir().unwrap();
    let mut connectors = Vec::new();
    let mut infos = Vec::new();
    for (name, program, args) in &programs {
        let connector = start(name, program, args, root.path()).await;
        infos.push(ConnectorInfo::new(*name, connector.tools()));
        connectors.push(connector);
    }
    let catalog = Catalog::new(infos).expect("the four servers' catalogue builds");
    assert_eq!(MCP_CASES.len(), 100);
    let cases: Vec<(&str, String)> = MCP_CASES.iter().map(|(q, m)| (*q, m.to_string())).collect();
    let absent: Vec<&String> = cases
        .iter()
        .map(|(_, meant)| meant)
        .filter(|meant| {
            let (connector, method) = meant.split_once('.').unwrap_or_default();
            catalog.tool(connector, method).is_none()
        })
        .collect();
    assert!(
        absent.is_empty(),
        "not methods of the servers as installed: {absent:?}"
    );
    let (top1, top3, misses) = score(&catalog, &cases);
    let github = github_figures();
    eprintln!(
        "search quality over 100 requests to 4 MCP servers ({} methods): top-1 {top1}%, top-3 {top3}%",
        catalog.method_count()
    );
    match github {
        Some((g1, g3)) => eprintln!(
            "search quality over 100 GitHub REST queries (1,223 operations): top-1 {g1}%, top-3 {g3}%"
        ),
        None => eprintln!("GitHub figures not computed: its fixture is missing"),
    }
    for miss in &misses {
        eprintln!("  {miss}");
    }

    // Nothing fits: the answer says so and names the connectors searched.
    for query in [
        "order a pizza",
        "send an email to bob",
        "book a flight to Lisbon",
    ] {
        let out = catalog.search(query, &[]);
        assert!(out.results.is_empty(), "{query:?}: {:?}", out.results);
        let note = out.note.unwrap_or_default();
        assert!(
            note.starts_with("nothing matched")
                && note.contains("4 connectors: everything, filesystem, memory, browser"),
            "{query:?}: {note}"
        );
    }
    for connector in &connectors {
        connector.shutdown().await;
    }
    assert!(
        top1 as f64 / 100.0 >= MCP_TOP1_FLOOR,
        "top-1 {top1}/100 is below the floor"
    );
    assert!(
        top3 as f64 / 100.0 >= MCP_TOP3_FLOOR,
        "top-3 {top3}/100 is below the floor"
    );
}
