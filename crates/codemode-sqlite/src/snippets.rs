//! Snippets, keyed by (runtime, name).

use crate::codec::{json, json_strings, Ctx};
use codemode::{Snippet, StoreError};
use rusqlite::{params, Connection, OptionalExtension, Row};

const COLUMNS: &str = "name, description, code, saved_at, input_schema, connectors";

type Raw = (String, String, String, i64, Option<String>, String);

fn read(r: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn decode(
    (name, description, code, saved_at, schema, connectors): Raw,
) -> Result<Snippet, StoreError> {
    let bad = |field: &str, e: serde_json::Error| {
        StoreError::Decode(format!("snippet {name:?} {field}: {e}"))
    };
    Ok(Snippet {
        input_schema: match schema {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| bad("input schema", e))?),
            None => None,
        },
        connectors: serde_json::from_str(&connectors).map_err(|e| bad("connectors", e))?,
        name,
        description,
        code,
        saved_at,
    })
}

/// Saves a snippet, replacing one of the same name.
pub(crate) fn put(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    snippet: &Snippet,
) -> Result<(), StoreError> {
    let schema = snippet.input_schema.as_ref().map(json).transpose()?;
    let connectors = json_strings(&snippet.connectors)?;
    conn.prepare_cached(
        "INSERT INTO snippets (runtime, name, description, code, saved_at, input_schema, connectors)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (runtime, name) DO UPDATE SET
             description = excluded.description, code = excluded.code,
             saved_at = excluded.saved_at, input_schema = excluded.input_schema,
             connectors = excluded.connectors",
    )
    .and_then(|mut s| {
        s.execute(params![
            runtime,
            snippet.name,
            snippet.description,
            snippet.code,
            snippet.saved_at,
            schema,
            connectors
        ])
    })
    .ctx(loc, "saving a snippet")?;
    Ok(())
}

/// One snippet by name.
pub(crate) fn get(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
    name: &str,
) -> Result<Option<Snippet>, StoreError> {
    let raw = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM snippets WHERE runtime = ?1 AND name = ?2"
        ))
        .and_then(|mut s| s.query_row(params![runtime, name], read).optional())
        .ctx(loc, "reading a snippet")?;
    raw.map(decode).transpose()
}

/// All snippets of a runtime, ordered by name.
pub(crate) fn list(
    conn: &mut Connection,
    loc: &str,
    runtime: &str,
) -> Result<Vec<Snippet>, StoreError> {
    let rows: Vec<Raw> = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM snippets WHERE runtime = ?1 ORDER BY name"
        ))
        .and_then(|mut s| s.query_map(params![runtime], read)?.collect())
        .ctx(loc, "listing snippets")?;
    rows.into_iter().map(decode).collect()
}

/// Deletes a snippet; returns whether it existed.
pub(crate) fn delete(
    conn: &Connection,
    loc: &str,
    runtime: &str,
    name: &str,
) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached("DELETE FROM snippets WHERE runtime = ?1 AND name = ?2")
        .and_then(|mut s| s.execute(params![runtime, name]))
        .ctx(loc, "deleting a snippet")?;
    Ok(n > 0)
}
