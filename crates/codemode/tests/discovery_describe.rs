//! `describe`, `types`, and the tool definition through the public API.

use codemode::discovery::{Catalog, ConnectorInfo, DescribeKind, DiscoveryError};
use codemode::{Snippet, ToolSpec};
use serde_json::json;

fn catalog() -> Catalog {
    let mut create = ToolSpec::new("create_issue");
    create.description = Some("Create an issue.".to_string());
    create.input_schema = json!({"type": "object", "properties": {"title": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}}}, "required": ["title"]});
    create.output_schema = Some(
        json!({"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}),
    );
    let mut list = ToolSpec::new("list_issues");
    list.description = Some("List issues.".to_string());
    list.requires_approval = false;
    let mut github = ConnectorInfo::new("github", vec![create, list]);
    github.instructions = Some("Issues live in one repository.".to_string());
    github.hint = Some("Issues and pull requests".to_string());
    Catalog::new(vec![github]).unwrap()
}

fn snippet() -> Snippet {
    Snippet {
        name: "open-issues".to_string(),
        description: "Open issues with a label.".to_string(),
        code: "async (input) => input".to_string(),
        saved_at: 1,
        input_schema: Some(
            json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}),
        ),
        connectors: vec!["github".to_string()],
    }
}

#[test]
fn describe_a_connector() {
    let out = catalog().describe("github", &[]).unwrap();
    assert_eq!(out.kind, DescribeKind::Connector);
    assert_eq!(out.path, "github");
    assert_eq!(
        out.description.as_deref(),
        Some("Issues live in one repository.")
    );
    assert_eq!(
        out.types,
        "type CreateIssueInput = { title: string; labels?: string[] };\ntype CreateIssueOutput = { number: number };\ntype ListIssuesInput = Record<string, unknown>;\n/** Issues live in one repository. */\ndeclare const github: {\n  /** Create an issue. Requires approval: the run pauses here until a person approves. */\n  create_issue(input: CreateIssueInput): Promise<CreateIssueOutput>;\n  /** List issues. */\n  list_issues(input?: ListIssuesInput): Promise<unknown>;\n};\n"
    );
}

#[test]
fn describe_a_method_by_path_and_by_bare_name() {
    let catalog = catalog();
    let out = catalog.describe("github.list_issues", &[]).unwrap();
    assert_eq!(out.kind, DescribeKind::Method);
    assert_eq!(out.path, "github.list_issues");
    assert_eq!(out.description.as_deref(), Some("List issues."));
    assert!(out
        .types
        .contains("list_issues(input?: ListIssuesInput): Promise<unknown>;"));
    assert!(!out.types.contains("create_issue"));
    assert_eq!(
        catalog.describe("create_issue", &[]).unwrap().path,
        "github.create_issue"
    );
}

#[test]
fn describe_a_snippet() {
    let out = catalog().describe("open-issues", &[snippet()]).unwrap();
    assert_eq!(out.kind, DescribeKind::Snippet);
    assert_eq!(
        out.description.as_deref(),
        Some("Open issues with a label.")
    );
    assert_eq!(
        out.types,
        "type OpenIssuesInput = { label: string };\n/** Open issues with a label. Run it with codemode.run(\"open-issues\", input). */\ndeclare const codemode: { run(name: \"open-issues\", input: OpenIssuesInput): Promise<unknown> };\n"
    );
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["kind"], "snippet");
}

#[test]
fn unknown_targets_name_the_closest_paths() {
    let catalog = catalog();
    let err = catalog.describe("github.create_isue", &[]).unwrap_err();
    assert!(
        err.starts_with("no connector, method or snippet is named \"github.create_isue\""),
        "{err}"
    );
    assert!(err.contains("Closest: github.create_issue"), "{err}");
    let err = catalog.describe("gihtub", &[]).unwrap_err();
    assert!(err.contains("Closest: github"), "{err}");
    let err = catalog.describe("open-issue", &[snippet()]).unwrap_err();
    assert!(err.contains("open-issues"), "{err}");
    assert!(catalog
        .describe("  ", &[])
        .unwrap_err()
        .contains("describe needs a target"));
}

#[test]
fn all_types_start_with_the_sdk() {
    let types = catalog().types();
    assert!(types.starts_with("type SearchOutput"));
    assert!(types.contains("declare const codemode: {"));
    assert!(types.contains("declare const github: {"));
    assert!(types.contains("type CreateIssueInput"));
}

#[test]
fn tool_definition_for_llm_apis() {
    let def = catalog().tool_definition();
    assert_eq!(def.name, "codemode");
    assert!(def
        .description
        .contains("- github (2 methods): Issues and pull requests"));
    assert_eq!(def.input_schema["required"], json!(["code"]));
    let value = serde_json::to_value(&def).unwrap();
    assert_eq!(value["inputSchema"]["properties"]["code"]["type"], "string");
}

#[test]
fn catalogue_refuses_bad_names_with_clear_errors() {
    let err = Catalog::new(vec![ConnectorInfo::new("codemode", vec![])]).unwrap_err();
    assert!(matches!(err, DiscoveryError::InvalidConnectorName { .. }));
    assert!(err.to_string().contains("platform SDK"));
    let err = Catalog::new(vec![ConnectorInfo::new("JSON", vec![])]).unwrap_err();
    assert!(err.to_string().contains("standard global"), "{err}");
    let err = Catalog::new(vec![ConnectorInfo::new(
        "gh",
        vec![ToolSpec::new("list-issues")],
    )])
    .unwrap_err();
    assert!(err.to_string().contains("sanitize_tool_name"), "{err}");
}
