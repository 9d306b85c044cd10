//! No two modules of one library crate import each other (directly or round a longer loop):
//! each crate's modules form layers. Read from the `use crate::…` and `super::…` paths of
//! every library crate's `src/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root, e.g. `["api", "executions"]`.
type ModPath = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file defines: `src/a/mod.rs` and `src/a.rs` are `a`; `lib.rs` the root.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The modules a file's code names: `crate::a::b` and `super::x` paths (test modules left out).
fn imports(module: &ModPath, is_mod_file: bool, text: &str) -> BTreeSet<ModPath> {
    let code: String = text
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", parent(module, is_mod_file)),
    ] {
        for (i, _) in code.match_indices(prefix) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &code[i + prefix.len()..];
            let mut path = base.clone();
            while let Some(r) = rest.strip_prefix("super::").filter(|_| prefix == "super::") {
                path.pop();
                rest = r;
            }
            for seg in rest.split("::") {
                let name: String = seg
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() || name == "super" || name == "self" {
                    break;
                }
                path.push(name);
                if !seg.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    break;
                }
            }
            out.insert(path);
        }
    }
    out
}

/// The module `super` names from `module` (a `mod.rs` is its own directory's module).
fn parent(module: &ModPath, _is_mod_file: bool) -> ModPath {
    let mut p = module.clone();
    p.pop();
    p
}

/// The edges between sibling modules: `a -> b` when code in `a` (or below it) names something
/// in `b` (or below it), and `a` and `b` share a parent.
fn sibling_edges(
    modules: &BTreeSet<ModPath>,
    uses: &BTreeMap<ModPath, BTreeSet<ModPath>>,
) -> BTreeSet<(ModPath, ModPath)> {
    let mut edges = BTreeSet::new();
    for (from, targets) in uses {
        for target in targets {
            // The longest known module that the path names.
            let Some(to) = (0..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                edges.insert((from[..=common].to_vec(), to[..=common].to_vec()));
            }
        }
    }
    edges
}

/// A cycle among the edges, if any.
fn find_cycle(edges: &BTreeSet<(ModPath, ModPath)>) -> Option<Vec<ModPath>> {
    let nodes: BTreeSet<&ModPath> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    for start in nodes {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for (_, next) in edges.iter().filter(|(a, _)| *a == node) {
                if next == start {
                    let mut cycle = path.clone();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    None
}

/// Imports that close a cycle today, one per cycle, each to be removed by moving what both
/// modules need into a module of its own: `(crate, from, to)`. The test fails when one of
/// them is gone (take it off this list) and when any other cycle appears.
const KNOWN: &[(&str, &str, &str)] = &[];

fn edges_in(src: &Path) -> BTreeSet<(ModPath, ModPath)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules = BTreeSet::new();
    let mut uses: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let is_mod = file.file_name().is_some_and(|n| n == "mod.rs");
        uses.entry(module.clone())
            .or_default()
            .extend(imports(&module, is_mod, &text));
        modules.insert(module);
    }
    sibling_edges(&modules, &uses)
}

fn cycle_in(src: &Path) -> Option<Vec<ModPath>> {
    find_cycle(&edges_in(src))
}

#[test]
fn no_library_crate_has_modules_that_import_each_other() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    let mut cycles = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let src = dir.join("src");
        if !src.join("lib.rs").exists() {
            continue;
        }
        checked += 1;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut edges = edges_in(&src);
        for (_, from, to) in KNOWN.iter().filter(|k| k.0 == name) {
            let edge = (vec![from.to_string()], vec![to.to_string()]);
            if !edges.remove(&edge) {
                cycles.push(format!(
                    "{name}: `{from}` no longer imports `{to}`: take it off KNOWN"
                ));
            }
        }
        if let Some(cycle) = find_cycle(&edges) {
            let shown: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
            cycles.push(format!("{}: {}", src.display(), shown.join(" -> ")));
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other (move what both need into a module of its own):\n{}",
        cycles.join("\n")
    );
    assert!(checked >= 8, "only {checked} library crates found");
}

#[test]
fn a_cycle_between_two_modules_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod c;\npub struct B;\n").unwrap();
    std::fs::write(src.join("b/c.rs"), "use super::super::a::A;\n").unwrap();
    let cycle = cycle_in(src).expect("the a <-> b cycle");
    assert!(cycle.contains(&vec!["a".to_string()]) && cycle.contains(&vec!["b".to_string()]));
    std::fs::write(src.join("b/c.rs"), "use super::B;\n").unwrap();
    assert_eq!(cycle_in(src), None, "a child using its parent is no cycle");
}
