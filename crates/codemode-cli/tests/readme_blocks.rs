//! Every config and command-line block of every README (and `codemode.example.toml`) is
//! checked against the real types, so the documentation cannot drift from the code: `toml`
//! blocks parse into `codemode.toml`'s schema, `json` MCP client configs and `sh` lines that
//! run `codemode` parse with the binary's own command-line definition.

use clap::Parser;
use codemode_cli::cli::Cli;
use codemode_server::config::Config;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every README of the repository.
fn readmes() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("examples/README.md")];
    for dir in std::fs::read_dir(root().join("crates")).unwrap() {
        let readme = dir.unwrap().path().join("README.md");
        files.push(readme);
    }
    files.retain(|f| f.exists());
    files
}

/// `(language, first line number, text)` of each fenced block.
fn blocks(text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => open = Some((lang.trim().to_string(), i + 2, String::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, _, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// Splits a shell line into words: single and double quotes, backslash escapes, `#` comments.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '\\') => word.get_or_insert_default().extend(chars.next()),
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    out.extend(word);
    out
}

/// The `codemode` arguments of a command line, if it runs `codemode`.
fn codemode_args(line: &str) -> Option<Vec<String>> {
    let mut w = words(line);
    while w
        .first()
        .is_some_and(|x| x.contains('=') && !x.starts_with('-'))
    {
        w.remove(0);
    }
    match w.first().map(String::as_str) {
        Some("codemode") => Some(w),
        Some("cargo") if w.get(1).map(String::as_str) == Some("run") => {
            if !w.windows(2).any(|p| p[0] == "-p" && p[1] == "codemode-cli") {
                return None;
            }
            let rest = w
                .iter()
                .position(|x| x == "--")
                .map_or(&[][..], |i| &w[i + 1..]);
            Some(
                std::iter::once("codemode".to_string())
                    .chain(rest.iter().cloned())
                    .collect(),
            )
        }
        _ => None,
    }
}

fn check_command(args: &[String], place: &str) {
    if let Err(e) = Cli::try_parse_from(args) {
        panic!("{place}: `{}` does not parse: {e}", args.join(" "));
    }
}

fn check_toml(text: &str, place: &str) {
    if text.contains("[package]") || text.contains("[dependencies]") {
        toml::from_str::<toml::Table>(text).unwrap_or_else(|e| panic!("{place}: {e}"));
        return;
    }
    let kinds = codemode_cli::app::kinds().unwrap();
    if let Err(e) = Config::parse_with(text, place, &kinds) {
        panic!("{e}");
    }
}

fn check_json(text: &str, place: &str) -> usize {
    let v: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{place}: {e}"));
    let mut commands = 0;
    if let Some(servers) = v.get("mcpServers").and_then(|s| s.as_object()) {
        for server in servers.values() {
            let command = server["command"].as_str().unwrap_or_default();
            if command.ends_with("codemode") {
                let args = server["args"].as_array().cloned().unwrap_or_default();
                let mut line = vec!["codemode".to_string()];
                line.extend(
                    args.iter()
                        .map(|a| a.as_str().unwrap_or_default().to_string()),
                );
                check_command(&line, place);
                commands += 1;
            }
        }
    }
    commands
}

#[test]
fn every_readme_block_of_config_or_commands_parses() {
    let (mut toml_blocks, mut commands) = (0, 0);
    for file in readmes() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (lang, line, body) in blocks(&text) {
            let place = format!("{}:{line}", file.display());
            match lang.as_str() {
                "toml" => {
                    check_toml(&body, &place);
                    toml_blocks += 1;
                }
                "json" => commands += check_json(&body, &place),
                "sh" | "bash" | "shell" => {
                    for (i, cmd) in body.replace("\\\n", " ").lines().enumerate() {
                        if let Some(args) = codemode_args(cmd) {
                            check_command(&args, &format!("{place} (command {})", i + 1));
                            commands += 1;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let example = root().join("codemode.example.toml");
    check_toml(
        &std::fs::read_to_string(&example).unwrap(),
        "codemode.example.toml",
    );
    assert!(toml_blocks >= 3, "only {toml_blocks} TOML blocks found");
    assert!(
        commands >= 8,
        "only {commands} codemode command lines found"
    );
}

#[test]
fn the_checker_refuses_what_the_binary_refuses() {
    let old = "[[connectors.mcp]]\nname = \"x\"\n";
    assert!(std::panic::catch_unwind(|| check_toml(old, "old")).is_err());
    let bad = codemode_args("cargo run -p codemode-cli -- serve --no-such-flag").unwrap();
    assert!(std::panic::catch_unwind(|| check_command(&bad, "bad")).is_err());
    assert_eq!(
        words(r#"codemode run -e 'return "a b"' # note"#),
        ["codemode", "run", "-e", r#"return "a b""#]
    );
    assert_eq!(
        codemode_args("CODEMODE_TOKEN=x codemode pending").unwrap(),
        ["codemode", "pending"]
    );
}

/// Every README with a Rust block is compiled by rustdoc: some crate's `lib.rs` includes it as
/// a doc comment under `#[cfg(doctest)]`, so `cargo test` compiles (and, unless `no_run`, runs)
/// each block. Rustdoc reads an unlabelled fence as Rust, so every fence names its language.
#[test]
fn every_rust_block_of_every_readme_is_a_doctest() {
    let mut includers = vec![root().join("examples/lib.rs")];
    for dir in std::fs::read_dir(root().join("crates")).unwrap() {
        includers.push(dir.unwrap().path().join("src/lib.rs"));
    }
    let included: Vec<PathBuf> = includers
        .iter()
        .filter_map(|lib| {
            let text = std::fs::read_to_string(lib).ok()?;
            Some(
                text.split("#[doc = include_str!(\"")
                    .skip(1)
                    .filter_map(|rest| rest.split_once("\")]"))
                    .map(|(path, _)| lib.parent().unwrap().join(path))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .map(|p| p.canonicalize().unwrap())
        .collect();
    let mut rust_blocks = 0;
    for file in readmes() {
        let text = std::fs::read_to_string(&file).unwrap();
        let blocks = blocks(&text);
        for (lang, line, _) in &blocks {
            assert!(
                !lang.is_empty(),
                "{}:{}: a fence without a language is compiled as Rust by rustdoc; name it (```text)",
                file.display(),
                line - 1
            );
        }
        let rust = blocks
            .iter()
            .filter(|(lang, _, _)| lang.starts_with("rust"))
            .count();
        if rust > 0 {
            rust_blocks += rust;
            assert!(
                included.contains(&file.canonicalize().unwrap()),
                "{} has Rust blocks that no crate compiles: include it in a lib.rs with \
                 #[cfg(doctest)] #[doc = include_str!(\"../README.md\")]",
                file.display()
            );
        }
    }
    assert!(rust_blocks >= 6, "only {rust_blocks} Rust blocks found");
}
