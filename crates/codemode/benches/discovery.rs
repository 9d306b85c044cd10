//! Discovery over the 1,223 GitHub REST operations: index build, search and describe latency,
//! and the size of the tool description against listing every tool schema classically.
//!
//! Run with `cargo bench -p codemode-core --bench discovery` after `npm ci` in `fixtures/`.

#[path = "../tests/support/github.rs"]
mod github;

use codemode::discovery::Catalog;
use std::hint::black_box;
use std::time::{Duration, Instant};

const QUERIES: &[&str] = &[
    "create issue comment",
    "list pull requests",
    "merge pull request",
    "get repository",
    "list workflow runs",
    "delete branch protection",
    "add labels to issue",
    "search code",
    "create release",
    "list commits",
    "repo",
    "get the authenticated user",
];

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

fn main() {
    let Some(spec) = github::load_github_spec() else {
        return;
    };
    let connector = github::github_connector(&spec);
    let operations = connector.tools.len();
    let classic = github::classic_listing_chars(&connector.tools);

    let mut builds = Vec::new();
    let mut catalog = None;
    for _ in 0..5 {
        let connectors = vec![connector.clone()];
        let start = Instant::now();
        let built = Catalog::new(connectors).expect("the GitHub catalogue builds");
        builds.push(start.elapsed());
        catalog = Some(built);
    }
    let catalog = catalog.expect("built at least once");

    let mut searches = Vec::new();
    for _ in 0..50 {
        for query in QUERIES {
            let start = Instant::now();
            black_box(catalog.search(black_box(query), &[]));
            searches.push(start.elapsed());
        }
    }

    let mut describes = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        black_box(
            catalog
                .describe(black_box("github.issues_create_comment"), &[])
                .ok(),
        );
        describes.push(start.elapsed());
    }
    let described = catalog
        .describe("github.issues_create_comment", &[])
        .map(|d| d.types.chars().count())
        .unwrap_or(0);

    let start = Instant::now();
    let all_types = catalog.types();
    let types_time = start.elapsed();

    let description = catalog.tool_description().chars().count();
    let json_chars =
        |v: serde_json::Value| serde_json::to_string(&v).map_or(0, |s| s.chars().count());
    let searched =
        json_chars(serde_json::to_value(catalog.search("close an issue", &[])).unwrap_or_default());
    let method = catalog
        .describe("github.issues_update", &[])
        .map(|d| json_chars(serde_json::to_value(d).unwrap_or_default()))
        .unwrap_or(0);
    let call = json_chars(
        serde_json::json!({"code": "async () => (await github.issues_update({ owner: \"o\", repo: \"r\", issue_number: 1, state: \"closed\" })).state"}),
    );
    let sequence = description + searched + method + call;

    println!("discovery over the GitHub REST description ({operations} operations)");
    println!(
        "  index build (Catalog::new)    median {:>10.2?}",
        median(builds)
    );
    println!(
        "  search                        median {:>10.2?}   p95 {:>10.2?}   ({} queries)",
        median(searches.clone()),
        percentile(searches.clone(), 0.95),
        searches.len()
    );
    println!(
        "  describe one method           median {:>10.2?}   ({described} chars of types)",
        median(describes)
    );
    println!(
        "  all types (first call)               {:>10.2?}   ({} chars)",
        types_time,
        all_types.chars().count()
    );
    println!("  tool description              {description:>10} chars (goal <= 4,000)");
    println!("  classic listing of all tools  {classic:>10} chars (name + description + inputSchema JSON)");
    println!(
        "  search -> describe -> call    {sequence:>10} chars (~{} tokens: description {description}, search {searched}, describe issues_update {method}, call {call})",
        sequence / 4
    );
    println!(
        "  classic listing, in tokens    {:>10} (~{}x the sequence)",
        classic / 4,
        classic / sequence.max(1)
    );
    println!(
        "  saved                         {:>10} chars ({:.0}x smaller)",
        classic.saturating_sub(description),
        classic as f64 / description.max(1) as f64
    );
}
