//! The whole GitHub REST description (`@octokit/openapi`, 1,223 operations) through discovery:
//! types for every operation, search over all of them, and a tool description that stays small.

#[path = "support/github.rs"]
mod support;

#[cfg(test)]
mod tests {
    use super::support::*;
    use codemode::discovery::{Catalog, DescribeKind};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::OnceLock;

    fn catalog() -> Option<&'static Catalog> {
        static CATALOG: OnceLock<Option<Catalog>> = OnceLock::new();
        CATALOG
            .get_or_init(|| {
                let spec = load_github_spec()?;
                Some(
                    Catalog::new(vec![github_connector(&spec)])
                        .expect("the GitHub catalogue builds"),
                )
            })
            .as_ref()
    }

    #[test]
    fn every_operation_gets_types() {
        let Some(catalog) = catalog() else { return };
        assert_eq!(catalog.method_count(), GITHUB_OPERATIONS);
        let tools = &catalog.connectors()[0].tools;
        let (mut typed, mut unknown, mut failed) = (0, 0, Vec::new());
        for tool in tools {
            let path = format!("github.{}", tool.name);
            let described = catch_unwind(AssertUnwindSafe(|| catalog.describe(&path, &[])));
            match described {
                Ok(Ok(out)) => {
                    assert_eq!(out.kind, DescribeKind::Method);
                    assert!(
                        out.types.contains(&format!("  {}(input", tool.name)),
                        "{path}"
                    );
                    assert!(
                        brackets_balance(&out.types),
                        "unbalanced declarations for {path}:\n{}",
                        out.types
                    );
                    let input_line = out
                        .types
                        .lines()
                        .find(|l| l.contains("Input = "))
                        .unwrap_or_default();
                    if input_line.ends_with("= unknown;") {
                        unknown += 1;
                    } else {
                        typed += 1;
                    }
                }
                Ok(Err(message)) => failed.push(format!("{path}: {message}")),
                Err(_) => failed.push(format!("{path}: panicked")),
            }
        }
        eprintln!(
            "GitHub: {typed} operations typed, {unknown} unknown, {} failed",
            failed.len()
        );
        assert!(failed.is_empty(), "{failed:#?}");
        assert_eq!(typed + unknown, GITHUB_OPERATIONS);
    }

    #[test]
    fn shared_schemas_are_named_types() {
        let Some(catalog) = catalog() else { return };
        let out = catalog
            .describe("github.issues_create_comment", &[])
            .unwrap();
        assert!(
            out.types.contains("type IssuesCreateCommentInput = {"),
            "{}",
            out.types
        );
        assert!(out.types.contains("body: string;"), "{}", out.types);
        assert!(out.types.contains("issue_number: number;"), "{}", out.types);
        assert!(
            out.types.contains("Promise<IssuesCreateCommentOutput>"),
            "{}",
            out.types
        );
        assert!(
            out.types
                .contains("type IssuesCreateCommentOutput = IssueComment;"),
            "{}",
            out.types
        );
        assert!(out.types.contains("type IssueComment = {"), "{}", out.types);
        assert!(out.types.contains("Requires approval"), "{}", out.types);
    }

    #[test]
    fn whole_connector_and_all_types() {
        let Some(catalog) = catalog() else { return };
        // The connector is too large for one answer: its first page lists methods without types.
        let connector = catalog.describe("github", &[]).unwrap();
        assert!(brackets_balance(&connector.types));
        assert_eq!(connector.page, Some(1));
        let listed = connector
            .types
            .matches("(input): Promise<unknown>;")
            .count();
        assert!(listed > 50 && listed < GITHUB_OPERATIONS, "{listed}");
        // Every declaration, for hosts, still has every method.
        let all = catalog.types();
        assert!(all.starts_with("type SearchOutput"));
        assert!(all.contains("declare const github: {"));
        assert_eq!(
            all.matches("): Promise<").count(),
            GITHUB_OPERATIONS + 4,
            "the SDK's four methods and every operation"
        );
    }

    #[test]
    fn search_ranks_the_obvious_method_first() {
        let Some(catalog) = catalog() else { return };
        let cases = [
            ("create issue comment", "github.issues_create_comment"),
            ("list pull requests", "github.pulls_list"),
            ("merge pull request", "github.pulls_merge"),
            ("get repository", "github.repos_get"),
            ("create issue", "github.issues_create"),
            ("list workflow runs", "github.actions_list_workflow_runs"),
            ("issues/create-comment", "github.issues_create_comment"),
            ("github.pulls_merge", "github.pulls_merge"),
        ];
        for (query, expected) in cases {
            let out = catalog.search(query, &[]);
            let top: Vec<&str> = out
                .results
                .iter()
                .take(5)
                .map(|r| r.path.as_str())
                .collect();
            assert_eq!(
                out.results.first().map(|r| r.path.as_str()),
                Some(expected),
                "{query:?} gave {top:?}"
            );
        }
        let comment = catalog.search("create issue comment", &[]);
        assert!(!comment.results[0].path.contains("reaction"));
        let wide = catalog.search("list", &[]);
        assert_eq!(wide.results.len(), 50);
        assert!(wide.truncated && wide.total > 50);
    }

    #[test]
    fn tool_description_stays_small() {
        let Some(catalog) = catalog() else { return };
        let description = catalog.tool_description();
        let classic = classic_listing_chars(&catalog.connectors()[0].tools);
        eprintln!(
            "tool description: {} chars; classic listing: {classic} chars",
            description.chars().count()
        );
        assert!(description.chars().count() <= 4_000);
        assert!(description.contains("github (1223 methods)"));
        assert!(classic > 100 * description.len());
    }

    #[test]
    fn brackets_check_works() {
        assert!(brackets_balance(
            "type A = { a: B<C[]> } /** { */ \"}\"; (x) => y"
        ));
        assert!(!brackets_balance("type A = { a: string"));
    }
}
