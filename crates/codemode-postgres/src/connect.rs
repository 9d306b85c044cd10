//! Parsing the URL, building the pool, and naming the server without its password.

use crate::error::{describe, map_pool_error};
use codemode::StoreError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::NoTls;

/// How a [`crate::PostgresStore`] connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Connections the pool keeps at most (each node needs about one per concurrent pass).
    pub max_connections: usize,
    /// How long opening one connection may take (when the URL sets no `connect_timeout`).
    pub connect_timeout: Duration,
    /// How long an operation waits for a free connection before it fails.
    pub wait_timeout: Duration,
    /// `synchronous_commit=on` (the default): a commit returns once its WAL is flushed to
    /// disk. Off, a commit returns before the flush (about 40 times faster on this machine's
    /// disk) and a server crash may lose the last commits, never consistency.
    pub synchronous_commit: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 16,
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(30),
            synchronous_commit: true,
        }
    }
}

/// Parses `url` and builds a pool; connects nothing yet. Returns the pool and the location.
pub(crate) fn pool(url: &str, options: &PostgresOptions) -> Result<(Pool, String), StoreError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
        StoreError::Backend(format!(
            "invalid PostgreSQL URL {}: {}; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE",
            redact(url),
            describe(&e)
        ))
    })?;
    if config.get_hosts().is_empty() {
        return Err(StoreError::Backend(format!(
            "invalid PostgreSQL URL {}: it names no host",
            redact(url)
        )));
    }
    password_from_env(&mut config, std::env::var("PGPASSWORD").ok());
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(options.connect_timeout);
    }
    if !options.synchronous_commit {
        let mut flags = config.get_options().unwrap_or("").to_string();
        flags.push_str(" -c synchronous_commit=off");
        config.options(flags.trim());
    }
    if config.get_application_name().is_none() {
        config.application_name("codemode");
    }
    let location = location(&config);
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(options.max_connections.max(1))
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(options.wait_timeout))
        .create_timeout(Some(options.connect_timeout))
        .recycle_timeout(Some(options.connect_timeout))
        .build()
        .map_err(|e| StoreError::Backend(format!("building the pool for {location}: {e}")))?;
    Ok((pool, location))
}

/// Takes one connection, mapping failure to an error that names the server.
pub(crate) async fn get(
    pool: &Pool,
    location: &str,
    what: &str,
) -> Result<deadpool_postgres::Client, StoreError> {
    pool.get()
        .await
        .map_err(|e| map_pool_error(location, what, e))
}

/// `postgres://user@host:port/db`: the server as shown in errors, never with a password.
fn location(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

/// The URL with any password replaced by `***` (URL and `key=value` forms).
pub fn redact(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            if let Some(colon) = userinfo.find(':') {
                return format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &userinfo[..colon],
                    &url[scheme_end + 3 + at..]
                );
            }
        }
        let query = rest.find('?').map(|q| scheme_end + 3 + q);
        return match query {
            Some(q) => format!("{}{}", &url[..q], redact_pairs(&url[q..])),
            None => url.to_string(),
        };
    }
    redact_pairs(url)
}

/// The URL without its password (`postgres://u:p@h/db` → `postgres://u@h/db`, a
/// `password=` query pair dropped), or `None` when it has none: a command line a person can
/// run as printed with the password in `PGPASSWORD`.
pub fn without_password(url: &str) -> Option<String> {
    let scheme_end = url.find("://")?;
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if let Some(at) = authority.rfind('@') {
        if let Some(colon) = authority[..at].find(':') {
            let user_end = scheme_end + 3 + colon;
            return Some(format!(
                "{}{}",
                &url[..user_end],
                &url[scheme_end + 3 + at..]
            ));
        }
    }
    let query_at = scheme_end + 3 + rest.find('?')?;
    let pairs: Vec<&str> = url[query_at + 1..].split('&').collect();
    let kept: Vec<&str> = pairs
        .iter()
        .copied()
        .filter(|p| !p.starts_with("password="))
        .collect();
    if kept.len() == pairs.len() {
        return None;
    }
    let base = &url[..query_at];
    Some(if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    })
}

/// Sets the password from `env_password` (the `PGPASSWORD` variable, as libpq and psql
/// read it) when the URL gave none.
pub fn password_from_env(config: &mut tokio_postgres::Config, env_password: Option<String>) {
    if config.get_password().is_none() {
        if let Some(p) = env_password.filter(|p| !p.is_empty()) {
            config.password(p);
        }
    }
}

/// Replaces the value after every `password=` with `***`.
fn redact_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("password=") {
        out.push_str(&rest[..i + "password=".len()]);
        out.push_str("***");
        rest = &rest[i + "password=".len()..];
        let end = rest.find(['&', ' ']).unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_is_left_out_of_a_printable_url_and_read_from_pgpassword() {
        use super::{password_from_env, without_password};
        let cases = [
            (
                "postgres://u:s3cret@h:5432/db",
                Some("postgres://u@h:5432/db"),
            ),
            (
                "postgres://u:p@h/db?sslmode=disable",
                Some("postgres://u@h/db?sslmode=disable"),
            ),
            (
                "postgres://u@h/db?password=p&sslmode=disable",
                Some("postgres://u@h/db?sslmode=disable"),
            ),
            ("postgres://u@h/db?password=p", Some("postgres://u@h/db")),
            ("postgres://u@h/db", None),
        ];
        for (url, printable) in cases {
            assert_eq!(without_password(url).as_deref(), printable, "{url}");
        }
        let mut config: tokio_postgres::Config = "postgres://u@h/db".parse().unwrap();
        password_from_env(&mut config, Some("from-env".into()));
        assert_eq!(config.get_password(), Some(&b"from-env"[..]));
        let mut config: tokio_postgres::Config = "postgres://u:url@h/db".parse().unwrap();
        password_from_env(&mut config, Some("from-env".into()));
        assert_eq!(
            config.get_password(),
            Some(&b"url"[..]),
            "the URL's password wins"
        );
    }

    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u:se@cret@h/db"), "postgres://u:***@h/db");
        assert_eq!(
            redact("postgres://h/db?user=u&password=secret&x=1"),
            "postgres://h/db?user=u&password=***&x=1"
        );
        assert_eq!(
            redact("host=h password=secret user=u"),
            "host=h password=*** user=u"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("not a url"), "not a url");
    }
}
