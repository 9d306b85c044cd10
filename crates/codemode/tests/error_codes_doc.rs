//! `docs/errors.md` lists every error code once, in the order of `ERROR_CODES`, with the
//! `retryable` answer the code gives.

use codemode::ERROR_CODES;

#[test]
fn the_doc_table_lists_every_code_with_its_retryable_answer() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let rows: Vec<(String, String)> = doc
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = ERROR_CODES
        .iter()
        .map(|c| {
            let retry = if c.retryable() { "yes" } else { "no" };
            (c.as_str().to_string(), retry.to_string())
        })
        .collect();
    assert_eq!(rows, want);
}
