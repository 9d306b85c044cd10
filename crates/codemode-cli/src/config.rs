//! Loading `codemode.toml` (its schema is `codemode_server::config`) and choosing the store.

use anyhow::{bail, Context, Result};
use codemode::kind::ConnectorKinds;
use codemode_server::config::Config;
use std::path::{Path, PathBuf};

/// Loads the file (`explicit`, or `./codemode.toml` when it exists), its connectors of
/// `kinds`, and checks its store URL.
pub fn load(explicit: Option<&Path>, kinds: &ConnectorKinds) -> Result<(Config, Option<PathBuf>)> {
    let (config, path) = Config::load_with(explicit, kinds)?;
    if let (Some(store), Some(path)) = (&config.store, &path) {
        StoreUrl::parse(store).with_context(|| format!("{}: field `store`", path.display()))?;
    }
    Ok((config, path))
}

/// Where the durable state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, shared by any number of nodes.
    Postgres(String),
}

impl StoreUrl {
    /// Parses `postgres://…` (or `postgresql://…`), `sqlite:PATH`, `sqlite://PATH` or a bare
    /// path; any other scheme (`mysql://…`) is an error naming the accepted forms.
    pub fn parse(url: &str) -> Result<StoreUrl> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(url.to_string()));
        }
        let scheme = url.split_once(':').map_or("", |(s, _)| s);
        let is_scheme = scheme.len() > 1
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if is_scheme && scheme != "sqlite" {
            bail!("{:?}: unknown store scheme `{scheme}`; the store is sqlite:PATH, sqlite://PATH, a file path, or postgres://USER@HOST/DB", codemode_postgres::redact(url));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if path.is_empty() {
            bail!("{url:?} names no file; use sqlite:PATH");
        }
        Ok(StoreUrl::Sqlite(PathBuf::from(path)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls() {
        assert_eq!(
            StoreUrl::parse("sqlite:./a.db").unwrap(),
            StoreUrl::Sqlite("./a.db".into())
        );
        assert_eq!(
            StoreUrl::parse("b.db").unwrap(),
            StoreUrl::Sqlite("b.db".into())
        );
        assert_eq!(
            StoreUrl::parse("postgres://u@h/db").unwrap(),
            StoreUrl::Postgres("postgres://u@h/db".into())
        );
    }
}
