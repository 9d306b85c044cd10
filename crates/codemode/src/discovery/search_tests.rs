//! Unit tests of the search index.
use super::*;

fn doc<'a>(name: &'a str, summary: &'a str) -> SearchDoc<'a> {
    SearchDoc {
        connector: "github",
        name,
        summary,
        description: "",
        parameters: &[],
        parameter_prose: "",
        http: None,
    }
}

#[test]
fn short_queries_need_every_word() {
    let index = SearchIndex::build([
        doc("issues_create", "Create an issue"),
        doc("issues_list", "List issues"),
    ]);
    let found = index.search(&Query::parse("create issue"));
    assert_eq!(found.hits.len(), 1);
    assert_eq!(found.hits[0].0, 0);
}

fn described<'a>(name: &'a str, summary: &'a str, description: &'a str) -> SearchDoc<'a> {
    SearchDoc {
        description,
        ..doc(name, summary)
    }
}

fn first(index: &SearchIndex, query: &str) -> Option<usize> {
    let mut hits = index.search(&Query::parse(query)).hits;
    hits.sort_by(|a, b| b.1.total_cmp(&a.1));
    hits.first().map(|h| h.0)
}

#[test]
fn methods_that_destroy_rank_lower_unless_asked() {
    let index = SearchIndex::build([
        doc("delete_entities", "Delete entities"),
        doc("list_entities", "List entities"),
    ]);
    assert_eq!(first(&index, "entity"), Some(1));
    assert_eq!(first(&index, "remove entities"), Some(0));
}

#[test]
fn a_word_only_in_descriptions_is_not_required() {
    let index = SearchIndex::build([
        doc("list_users", "List users"),
        described(
            "list_files",
            "List files",
            "Files users keep in the workspace.",
        ),
    ]);
    let found = index.search(&Query::parse("list users workspace"));
    assert_eq!(found.hits.len(), 2, "{:?}", found.hits);
    assert_eq!(first(&index, "list users workspace"), Some(0));
    assert!(index.search(&Query::parse("workspace")).weak);
}

#[test]
fn the_object_after_the_verb_counts_in_the_name() {
    let index = SearchIndex::build([
        doc("delete_entities", "Delete entities and their relations"),
        described(
            "delete_relations",
            "Delete relations",
            "Each relation runs from one entity to another.",
        ),
    ]);
    assert_eq!(
        first(&index, "remove the relation between two entities"),
        Some(1)
    );
}

#[test]
fn prefixes_match_with_less_weight() {
    let index = SearchIndex::build([doc("repos_get", "Get a repository"), doc("repo_x", "x")]);
    assert_eq!(index.search(&Query::parse("repo")).hits.len(), 2);
}
