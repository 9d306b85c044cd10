//! Search quality over the GitHub REST description: 100 queries a person would type, each with
//! the operation it means written by hand. Prints top-1 and top-3 and asserts a floor.

#[path = "support/github_queries.rs"]
mod github_queries;
#[path = "support/github.rs"]
mod support;

use codemode::discovery::Catalog;
use github_queries::GITHUB_CASES as CASES;
use support::{github_connector, load_github_spec};

/// Top-1 share the test requires (it prints what it reached).
const TOP1_FLOOR: f64 = 0.90;
/// Top-3 share the test requires.
const TOP3_FLOOR: f64 = 0.97;

#[test]
fn hundred_queries_find_what_was_meant() {
    let Some(spec) = load_github_spec() else {
        return;
    };
    assert_eq!(CASES.len(), 100);
    let catalog = Catalog::new(vec![github_connector(&spec)]).expect("the GitHub catalogue builds");
    let (mut top1, mut top3) = (0usize, 0usize);
    let mut misses = Vec::new();
    for (query, meant) in CASES {
        let path = format!("github.{meant}");
        assert!(
            catalog.tool("github", meant).is_some(),
            "{meant} is not an operation"
        );
        let out = catalog.search(query, &[]);
        let rank = out.results.iter().position(|r| r.path == path);
        match rank {
            Some(0) => {
                top1 += 1;
                top3 += 1;
            }
            Some(r) if r < 3 => top3 += 1,
            _ => {}
        }
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
    let n = CASES.len() as f64;
    eprintln!(
        "search quality over {} GitHub queries: top-1 {:.0}%, top-3 {:.0}%",
        CASES.len(),
        100.0 * top1 as f64 / n,
        100.0 * top3 as f64 / n
    );
    for miss in &misses {
        eprintln!("  {miss}");
    }
    assert!(
        top1 as f64 / n >= TOP1_FLOOR,
        "top-1 {top1}/100 is below the floor"
    );
    assert!(
        top3 as f64 / n >= TOP3_FLOOR,
        "top-3 {top3}/100 is below the floor"
    );
}
