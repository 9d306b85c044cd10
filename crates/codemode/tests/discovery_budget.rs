//! Every describe answer over the GitHub description fits the default budget (6,000 tokens =
//! 24,000 characters): the connector, each of its pages, and each of the 1,223 methods.

#[path = "support/github.rs"]
mod support;

use codemode::discovery::{Catalog, DescribeKind, DescribeOptions};
use codemode::value::serialized_len;
use support::{classic_listing_chars, github_connector, load_github_spec, GITHUB_OPERATIONS};

const BUDGET: usize = 24_000;

fn chars(out: &codemode::discovery::DescribeOutput) -> usize {
    serialized_len(&serde_json::to_value(out).unwrap())
}

#[test]
fn every_describe_fits_the_budget() {
    let Some(spec) = load_github_spec() else {
        return;
    };
    let catalog = Catalog::new(vec![github_connector(&spec)]).unwrap();
    let first = catalog.describe("github", &[]).unwrap();
    assert_eq!(first.kind, DescribeKind::Connector);
    let pages = first.pages.expect("the GitHub connector is paged");
    assert_eq!(first.page, Some(1));
    let note = first.note.clone().unwrap();
    assert!(note.contains(&format!("page 1 of {pages}")), "{note}");
    assert!(
        note.contains("codemode.describe(\"github\", { page: 2 })"),
        "{note}"
    );
    let mut listed = 0;
    let mut largest_page = 0;
    for page in 1..=pages {
        let options = DescribeOptions {
            page: Some(page),
            ..DescribeOptions::default()
        };
        let out = catalog.describe_with("github", &[], options).unwrap();
        assert!(chars(&out) <= BUDGET, "page {page}: {} chars", chars(&out));
        largest_page = largest_page.max(chars(&out));
        listed += out.types.matches("(input): Promise<unknown>;").count();
    }
    assert_eq!(listed, GITHUB_OPERATIONS, "every method is listed once");
    let past = DescribeOptions {
        page: Some(pages + 1),
        ..DescribeOptions::default()
    };
    let err = catalog.describe_with("github", &[], past).unwrap_err();
    assert!(err.contains(&format!("has {pages} page(s)")), "{err}");

    let (mut largest, mut bounded, mut total) = (0, 0, 0);
    for tool in &catalog.connectors()[0].tools {
        let path = format!("github.{}", tool.name);
        let out = catalog.describe(&path, &[]).unwrap();
        let n = chars(&out);
        assert!(n <= BUDGET, "{path}: {n} chars");
        largest = largest.max(n);
        total += n;
        bounded += usize::from(out.note.is_some());
    }
    let typical = chars(&catalog.describe("github.issues_update", &[]).unwrap());
    let full = catalog
        .describe_with(
            "github.repos_get",
            &[],
            DescribeOptions {
                full: true,
                ..Default::default()
            },
        )
        .unwrap();
    let bounded_repo = catalog.describe("github.repos_get", &[]).unwrap();
    assert!(full.types.len() > bounded_repo.types.len());
    assert!(bounded_repo.note.unwrap().contains("{ full: true }"));
    eprintln!(
        "describe over GitHub: connector {pages} pages (largest {largest_page} chars); methods: largest {largest} chars, mean {}, {bounded} of {GITHUB_OPERATIONS} with a bounded output type; issues_update {typical} chars; repos_get full {} chars",
        total / GITHUB_OPERATIONS,
        chars(&full)
    );
    eprintln!(
        "classic listing of every tool: {} chars (~{} tokens)",
        classic_listing_chars(&catalog.connectors()[0].tools),
        classic_listing_chars(&catalog.connectors()[0].tools) / 4
    );
}

#[test]
fn globs_list_a_group_or_say_nothing_matched() {
    let Some(spec) = load_github_spec() else {
        return;
    };
    let catalog = Catalog::new(vec![github_connector(&spec)]).unwrap();
    let issues = catalog.describe("github.issues_*", &[]).unwrap();
    assert_eq!(issues.kind, DescribeKind::Methods);
    assert!(issues.types.contains("issues_update"), "{}", issues.types);
    assert!(!issues.types.contains("pulls_list"));
    assert!(chars(&issues) <= BUDGET);
    let none = catalog.describe("github.zebra_*", &[]).unwrap_err();
    assert!(
        none.contains("no method matches \"github.zebra_*\""),
        "{none}"
    );
    assert!(none.contains("codemode.search(\"zebra\")"), "{none}");
}
