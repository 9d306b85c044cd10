//! Snippets, keyed by (runtime, name).

use crate::codec::{get, json, json_strings, text_in, text_out};
use crate::error::Ctx;
use codemode::{Snippet, StoreError};
use deadpool_postgres::Client;
use tokio_postgres::Row;

const COLUMNS: &str = "name, description, code, saved_at, input_schema, connectors";

fn decode(row: &Row) -> Result<Snippet, StoreError> {
    let name: String = get(row, 0)?;
    let bad = |field: &str, e: serde_json::Error| {
        StoreError::Decode(format!("snippet {name:?} {field}: {e}"))
    };
    let schema: Option<String> = get(row, 4)?;
    let connectors: String = get(row, 5)?;
    Ok(Snippet {
        input_schema: match schema {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| bad("input schema", e))?),
            None => None,
        },
        connectors: serde_json::from_str(&connectors).map_err(|e| bad("connectors", e))?,
        description: text_out(get(row, 1)?)?,
        code: text_out(get(row, 2)?)?,
        saved_at: get(row, 3)?,
        name,
    })
}

/// Saves a snippet, replacing one of the same name.
pub(crate) async fn put(
    client: &Client,
    loc: &str,
    runtime: &str,
    snippet: &Snippet,
) -> Result<(), StoreError> {
    let schema = snippet.input_schema.as_ref().map(json).transpose()?;
    let connectors = json_strings(&snippet.connectors)?;
    let stmt = client
        .prepare_cached(
            "INSERT INTO codemode_snippets
                 (runtime, name, description, code, saved_at, input_schema, connectors)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (runtime, name) DO UPDATE SET
                 description = excluded.description, code = excluded.code,
                 saved_at = excluded.saved_at, input_schema = excluded.input_schema,
                 connectors = excluded.connectors",
        )
        .await
        .ctx(loc, "preparing a snippet write")?;
    client
        .execute(
            &stmt,
            &[
                &runtime,
                &snippet.name,
                &text_in(&snippet.description),
                &text_in(&snippet.code),
                &snippet.saved_at,
                &schema,
                &connectors,
            ],
        )
        .await
        .ctx(loc, "saving a snippet")?;
    Ok(())
}

/// One snippet by name.
pub(crate) async fn get_one(
    client: &Client,
    loc: &str,
    runtime: &str,
    name: &str,
) -> Result<Option<Snippet>, StoreError> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM codemode_snippets WHERE runtime = $1 AND name = $2"
        ))
        .await
        .ctx(loc, "preparing a snippet read")?;
    let row = client
        .query_opt(&stmt, &[&runtime, &name])
        .await
        .ctx(loc, "reading a snippet")?;
    row.as_ref().map(decode).transpose()
}

/// All snippets of a runtime, ordered by name.
pub(crate) async fn list(
    client: &Client,
    loc: &str,
    runtime: &str,
) -> Result<Vec<Snippet>, StoreError> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM codemode_snippets WHERE runtime = $1 ORDER BY name COLLATE \"C\""
        ))
        .await
        .ctx(loc, "preparing a snippet list")?;
    let rows = client
        .query(&stmt, &[&runtime])
        .await
        .ctx(loc, "listing snippets")?;
    rows.iter().map(decode).collect()
}

/// Deletes a snippet; returns whether it existed.
pub(crate) async fn delete(
    client: &Client,
    loc: &str,
    runtime: &str,
    name: &str,
) -> Result<bool, StoreError> {
    let stmt = client
        .prepare_cached("DELETE FROM codemode_snippets WHERE runtime = $1 AND name = $2")
        .await
        .ctx(loc, "preparing a snippet delete")?;
    let n = client
        .execute(&stmt, &[&runtime, &name])
        .await
        .ctx(loc, "deleting a snippet")?;
    Ok(n > 0)
}
