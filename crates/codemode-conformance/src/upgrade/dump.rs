//! The PostgreSQL fixture: a plain SQL dump (`pg_dump --column-inserts`), loaded with one
//! simple-protocol batch so that no `psql` is needed.

use tokio_postgres::NoTls;

/// `dump` without what only `psql` or a newer server understands: psql meta-commands
/// (`\restrict`, `\unrestrict`, whose keys change with every dump) and `SET` of settings older
/// servers lack (`transaction_timeout`).
pub fn clean_dump(dump: &str) -> String {
    let mut out = String::with_capacity(dump.len());
    for line in dump.lines() {
        if line.starts_with('\\') || line.starts_with("SET transaction_timeout") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Loads `dump` (see [`clean_dump`]) into the database at `url`, which should be empty.
pub async fn load_dump(url: &str, dump: &str) -> Result<(), String> {
    let shown = codemode_postgres::redact(url);
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| format!("connecting to {shown}: {e}"))?;
    let driver = tokio::spawn(connection);
    let loaded = client
        .batch_execute(&clean_dump(dump))
        .await
        .map_err(|e| match e.as_db_error() {
            Some(db) => format!("loading the dump into {shown}: {}", db.message()),
            None => format!("loading the dump into {shown}: {e}"),
        });
    drop(client);
    let _ = driver.await;
    loaded
}
