//! Property test: no configuration text makes the loader panic. The documented example,
//! mutated line by line (lines dropped, doubled, values swapped for odd ones), and arbitrary
//! TOML-like text either load or give an error that names the file. `PROPTEST_CASES` sets
//! the number of cases.

use codemode_server::config::Config;
use proptest::prelude::*;
use std::path::Path;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn example() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../codemode.example.toml");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Values a person might write by mistake.
fn odd_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("1e308".to_string()),
        Just("nan".to_string()),
        Just("\"\"".to_string()),
        Just("\"../../etc/passwd\"".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("true".to_string()),
        Just("\"${args.nope}\"".to_string()),
        Just("{ pick = \"items\" }".to_string()),
        Just("\"{{nope}}\"".to_string()),
        "\"\\PC{0,12}\"",
        "[0-9]{1,25}",
    ]
}

/// One change to the example's lines.
#[derive(Debug, Clone)]
enum Edit {
    Drop(usize),
    Double(usize),
    Value(usize, String),
    Insert(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Drop),
        any::<usize>().prop_map(Edit::Double),
        (any::<usize>(), odd_value()).prop_map(|(i, v)| Edit::Value(i, v)),
        (any::<usize>(), "\\PC{0,30}").prop_map(|(i, t)| Edit::Insert(i, t)),
    ]
}

fn apply(lines: &mut Vec<String>, e: &Edit) {
    if lines.is_empty() {
        return;
    }
    let at = |i: &usize, n: usize| i % n;
    match e {
        Edit::Drop(i) => {
            let i = at(i, lines.len());
            lines.remove(i);
        }
        Edit::Double(i) => {
            let i = at(i, lines.len());
            lines.insert(i, lines[i].clone());
        }
        Edit::Value(i, v) => {
            let i = at(i, lines.len());
            if let Some((key, _)) = lines[i].split_once('=') {
                lines[i] = format!("{key}= {v}");
            }
        }
        Edit::Insert(i, t) => {
            let i = at(i, lines.len());
            lines.insert(i, t.clone());
        }
    }
}

fn check(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = Config::parse(text, "c.toml") {
        let message = e.to_string();
        prop_assert!(message.contains("c.toml"), "{message}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2000)))]

    #[test]
    fn a_mutated_example_loads_or_names_the_file(edits in prop::collection::vec(edit(), 1..6)) {
        let mut lines = example();
        for e in &edits {
            apply(&mut lines, e);
        }
        check(&lines.join("\n"))?;
    }

    #[test]
    fn arbitrary_text_loads_or_names_the_file(text in "(\\[[a-z.]{0,12}\\]\n|[a-z_.]{1,12} = [^\n]{0,12}\n|\\PC{0,20}\n){0,12}") {
        check(&text)?;
    }
}
