//! Search ranking pinned on a fixed catalogue of GitHub-like methods.

use codemode::discovery::{Catalog, ConnectorInfo, SearchKind, MAX_SEARCH_RESULTS};
use codemode::{Snippet, ToolSpec};

fn tool(name: &str, description: &str, requires_approval: bool) -> ToolSpec {
    let mut tool = ToolSpec::new(name);
    tool.description = Some(description.to_string());
    tool.requires_approval = requires_approval;
    tool.read_only = !requires_approval;
    tool
}

fn catalog() -> Catalog {
    let github = ConnectorInfo::new(
        "github",
        vec![
            tool("reactions_create_for_issue_comment", "Create reaction for an issue comment\n\nCreate a reaction to an issue comment.", true),
            tool("reactions_list_for_issue_comment", "List reactions for an issue comment", false),
            tool("reactions_delete_for_issue_comment", "Delete an issue comment reaction", true),
            tool("issues_create_comment", "Create an issue comment\n\nYou can use the REST API to create comments on issues and pull requests.", true),
            tool("issues_list_comments", "List issue comments\n\nIssue comments are ordered by ascending ID.", false),
            tool("issues_update_comment", "Update an issue comment", true),
            tool("issues_create", "Create an issue\n\nAny user with pull access to a repository can create an issue.", true),
            tool("issues_list_for_repo", "List repository issues", false),
            tool("pulls_list", "List pull requests", false),
            tool("pulls_create", "Create a pull request", true),
            tool("pulls_create_review_comment", "Create a review comment for a pull request", true),
            tool("pull_request_stacks_list", "List pull request stacks", false),
            tool("repos_get", "Get a repository", false),
            tool("repos_list_for_org", "List organization repositories", false),
            tool("users_get_authenticated", "Get the authenticated user", false),
        ],
    );
    let slack = ConnectorInfo::new(
        "slack",
        vec![
            tool("postMessage", "Send a message to a channel.", true),
            tool("listChannels", "List channels in the workspace.", false),
        ],
    );
    Catalog::new(vec![github, slack]).unwrap()
}

fn snippet(name: &str, description: &str) -> Snippet {
    Snippet {
        name: name.to_string(),
        description: description.to_string(),
        code: "async () => 1".to_string(),
        saved_at: 0,
        input_schema: None,
        connectors: vec!["github".to_string()],
    }
}

fn paths(catalog: &Catalog, query: &str, snippets: &[Snippet]) -> Vec<String> {
    catalog
        .search(query, snippets)
        .results
        .into_iter()
        .map(|r| r.path)
        .collect()
}

#[test]
fn create_issue_comment_finds_the_comment_method_before_reactions() {
    let found = paths(&catalog(), "create issue comment", &[]);
    assert_eq!(
        found,
        [
            "github.issues_create_comment",
            "github.reactions_create_for_issue_comment",
        ]
    );
}

#[test]
fn pinned_rankings() {
    let catalog = catalog();
    let cases: &[(&str, &str)] = &[
        ("list pull requests", "github.pulls_list"),
        ("create pull request", "github.pulls_create"),
        ("create issue", "github.issues_create"),
        ("get repository", "github.repos_get"),
        ("authenticated user", "github.users_get_authenticated"),
        ("post message", "slack.postMessage"),
        ("send a message", "slack.postMessage"),
        ("list channels", "slack.listChannels"),
        ("listChannels", "slack.listChannels"),
        ("issues.create-comment", "github.issues_create_comment"),
        ("github.pulls_list", "github.pulls_list"),
        ("repo", "github.repos_get"),
    ];
    for (query, expected) in cases {
        let found = paths(&catalog, query, &[]);
        assert_eq!(
            found.first().map(String::as_str),
            Some(*expected),
            "{query:?} gave {found:?}"
        );
    }
}

#[test]
fn name_beats_summary_beats_description() {
    let catalog = Catalog::new(vec![ConnectorInfo::new(
        "c",
        vec![
            tool(
                "alpha",
                "Nothing here.\n\nThe widget is mentioned only in the description.",
                false,
            ),
            tool("beta", "Makes a widget. More text.", false),
            tool("widget_gamma", "Does things.", false),
        ],
    )])
    .unwrap();
    assert_eq!(
        paths(&catalog, "widget", &[]),
        ["c.widget_gamma", "c.beta", "c.alpha"]
    );
}

#[test]
fn every_known_word_of_a_short_query_must_match() {
    let catalog = catalog();
    // "zebra" is in no method: it is not required, and the note says so.
    let out = catalog.search("create issue zebra", &[]);
    assert_eq!(out.results[0].path, "github.issues_create");
    assert!(out.results.iter().all(|r| r.path.contains("create")));
    assert!(out.note.unwrap().contains("no method mentions \"zebra\""));
    let none = catalog.search("zebra giraffe", &[]);
    assert_eq!(none.total, 0);
    assert!(none.note.unwrap().contains("nothing matched"));
}

#[test]
fn long_queries_tolerate_a_stray_word() {
    let found = paths(
        &catalog(),
        "please create a new comment on this issue for me quickly",
        &[],
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("github.issues_create_comment")
    );
}

#[test]
fn ties_are_broken_by_path_and_results_are_stable() {
    let catalog = Catalog::new(vec![
        ConnectorInfo::new("b", vec![tool("list_things", "List things.", false)]),
        ConnectorInfo::new("a", vec![tool("list_things", "List things.", false)]),
    ])
    .unwrap();
    assert_eq!(
        paths(&catalog, "list things", &[]),
        ["a.list_things", "b.list_things"]
    );
    let first = catalog.search("list", &[]);
    for _ in 0..10 {
        assert_eq!(catalog.search("list", &[]), first);
    }
}

#[test]
fn snippets_are_searched_too() {
    let snippets = [
        snippet("list-open-prs", "List open pull requests for a repository."),
        snippet("weekly-report", "Summarise the week."),
    ];
    let out = catalog().search("list open pull requests", &snippets);
    let rank = out.results.iter().position(|r| r.path == "list-open-prs");
    assert!(matches!(rank, Some(0..=2)), "{:?}", out.results);
    assert!(out.results.iter().all(|r| r.path != "weekly-report"));
    let first = &out.results[rank.unwrap()];
    assert_eq!(first.kind, SearchKind::Snippet);
    assert_eq!(first.connector, "codemode");
    assert_eq!(first.method, "run");
}

#[test]
fn results_carry_approval_and_serialise_in_camel_case() {
    let out = catalog().search("create issue comment", &[]);
    assert!(out.results[0].requires_approval);
    let json = serde_json::to_value(&out).unwrap();
    let first = &json["results"][0];
    assert_eq!(first["path"], "github.issues_create_comment");
    assert_eq!(first["connector"], "github");
    assert_eq!(first["method"], "issues_create_comment");
    assert_eq!(first["description"], "Create an issue comment");
    assert_eq!(first["kind"], "method");
    assert_eq!(first["requiresApproval"], true);
    assert!(first["score"].as_f64().unwrap() > 0.0);
    assert_eq!(json["total"], 2);
    assert_eq!(json["truncated"], false);
    assert!(json.get("note").is_none());
}

#[test]
fn at_most_fifty_results() {
    let tools = (0..120)
        .map(|i| tool(&format!("list_item_{i}"), "List items.", false))
        .collect();
    let catalog = Catalog::new(vec![ConnectorInfo::new("many", tools)]).unwrap();
    let out = catalog.search("list items", &[]);
    assert_eq!(out.results.len(), MAX_SEARCH_RESULTS);
    assert_eq!(out.total, 120);
    assert!(out.truncated);
}

#[test]
fn empty_and_huge_queries_answer_with_a_note() {
    let catalog = catalog();
    for query in ["", "   ", "?!.", "the of a"] {
        let out = catalog.search(query, &[]);
        assert!(out.results.is_empty(), "{query:?}");
        assert!(out.note.is_some(), "{query:?}");
    }
    let huge = "create issue comment ".repeat(100_000);
    let out = catalog.search(&huge, &[]);
    assert!(out.note.unwrap().contains("only the start was used"));
    assert_eq!(out.results[0].path, "github.issues_create_comment");
    let binary: String = (0..5_000u32).filter_map(char::from_u32).collect();
    let _ = catalog.search(&binary, &[]);
}
