//! The reference-equivalence table in `docs/reference.md` names only things that exist: each
//! Rust path is declared public in the workspace's sources, each CLI command is a variant of
//! the CLI's clap `Command` enum.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sources(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The backticked spans of the table's second column.
fn second_column(doc: &str) -> Vec<String> {
    doc.lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| Reference"))
        .filter_map(|l| l.split('|').nth(2).map(str::to_string))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn declares(src: &str, name: &str) -> bool {
    [
        "fn", "async fn", "struct", "trait", "enum", "type", "const", "mod",
    ]
    .iter()
    .any(|kind| {
        [format!("pub {kind} {name}"), format!("    {kind} {name}")]
            .iter()
            .any(|decl| {
                src.match_indices(decl.as_str()).any(|(at, _)| {
                    src[at + decl.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| !(c.is_alphanumeric() || c == '_'))
                })
            })
    })
}

#[test]
fn every_rust_path_and_cli_command_in_the_table_exists() {
    let doc = std::fs::read_to_string(root().join("docs/reference.md")).unwrap();
    let mut src = String::new();
    sources(&root().join("crates"), &mut src);
    let cli = std::fs::read_to_string(root().join("crates/codemode-cli/src/cli/mod.rs")).unwrap();
    let spans = second_column(&doc);
    let (mut paths, mut commands) = (0, 0);
    for span in &spans {
        if let Some(command) = span.strip_prefix("codemode ") {
            let variant: String = command
                .split('-')
                .map(|w| w[..1].to_uppercase() + &w[1..])
                .collect();
            let found = [
                format!("    {variant} {{"),
                format!("    {variant}("),
                format!("    {variant},"),
            ]
            .iter()
            .any(|v| cli.contains(v.as_str()));
            assert!(
                found,
                "the table names CLI command {span:?}, which the CLI does not have"
            );
            commands += 1;
        } else if span.starts_with("codemode") && span.contains("::") {
            for name in span.split("::").skip(1) {
                assert!(
                    declares(&src, name),
                    "the table names {span:?}, but no public {name} exists"
                );
            }
            paths += 1;
        }
    }
    assert!(paths >= 40, "only {paths} Rust paths found in the table");
    assert!(
        commands >= 15,
        "only {commands} CLI commands found in the table"
    );
}

#[test]
fn every_row_names_a_reference_item_or_is_marked_ours() {
    let doc = std::fs::read_to_string(root().join("docs/reference.md")).unwrap();
    let mut ours = 0;
    for line in doc
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| Reference"))
    {
        let reference = line.split('|').nth(1).unwrap_or_default();
        let marked = reference.contains("**(ours)**");
        ours += usize::from(marked);
        assert!(
            marked != reference.contains('`'),
            "a row's Reference cell names a reference item in backticks or is marked **(ours)**, not both or neither: {line}"
        );
    }
    assert!(
        !doc.contains("(no equivalent)"),
        "mark a row the reference does not have **(ours)**"
    );
    assert!(ours >= 4, "only {ours} rows are marked **(ours)**");
}
