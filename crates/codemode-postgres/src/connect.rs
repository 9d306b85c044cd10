//! Parsing the URL, building the pool, and naming the server without its password.

use crate::error::{describe, map_pool_error};
use codemode::StoreError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::NoTls;
use url::Url;

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
    if !url.contains("://") {
        return redact_pairs(url);
    }
    without_secret(url, Some("***")).unwrap_or_else(|| url.to_string())
}

/// The URL without its password (`postgres://u:p@h/db` → `postgres://u@h/db`, a
/// `password=` query pair dropped), or `None` when it has none: a command line a person can
/// run as printed with the password in `PGPASSWORD`.
pub fn without_password(url: &str) -> Option<String> {
    without_secret(url, None)
}

/// `url` with its password (in the user information and in `password` query pairs) replaced
/// by `mask`, or left out when `mask` is `None`; `None` when it holds no password.
fn without_secret(url: &str, mask: Option<&str>) -> Option<String> {
    // A PostgreSQL URL has no fragment: libpq reads a `#` as part of the text (a password's,
    // say), so it is parsed as data here too.
    let text = url.replace('#', "%23");
    let Ok(mut parsed) = Url::parse(&text) else {
        // What the URL parser refuses and libpq takes (several hosts, `h1:5432,h2:5433`).
        return unparsed_without_secret(url, mask);
    };
    let mut found = false;
    if parsed.password().is_some() {
        found = parsed.set_password(mask).is_ok();
    }
    if let Some(query) = parsed.query().and_then(|q| query_without_password(q, mask)) {
        found = true;
        parsed.set_query((!query.is_empty()).then_some(query.as_str()));
    }
    found.then(|| parsed.to_string())
}

/// A query with each `password` pair's value replaced by `mask` (the pair left out when
/// `mask` is `None`); `None` when it has no such pair.
fn query_without_password(query: &str, mask: Option<&str>) -> Option<String> {
    let mut found = false;
    let kept: Vec<String> = query
        .split('&')
        .filter_map(|pair| {
            let key = pair.split_once('=').map_or(pair, |(k, _)| k);
            let decoded = url::form_urlencoded::parse(key.as_bytes()).next();
            if decoded.is_none_or(|(k, _)| k != "password") {
                return Some(pair.to_string());
            }
            found = true;
            mask.map(|m| format!("{key}={m}"))
        })
        .collect();
    found.then(|| kept.join("&"))
}

/// [`without_secret`] for a URL the parser refuses, read as libpq reads it: the user
/// information ends at the last `@` before the path or query, the password after its
/// first `:`.
fn unparsed_without_secret(url: &str, mask: Option<&str>) -> Option<String> {
    let (scheme, rest) = url.split_at(url.find("://")? + 3);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut found = false;
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => {
                found = true;
                match mask {
                    Some(m) => format!("{user}:{m}@{hosts}"),
                    None => format!("{user}@{hosts}"),
                }
            }
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => match query_without_password(query, mask) {
            Some(q) => {
                found = true;
                if q.is_empty() {
                    path.to_string()
                } else {
                    format!("{path}?{q}")
                }
            }
            None => tail.to_string(),
        },
        None => tail.to_string(),
    };
    found.then(|| format!("{scheme}{authority}{tail}"))
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

/// The `key=value` form (`host=h password=secret`) with each password's value replaced by
/// `***`: a value is single-quoted (with `\` escapes) or runs to the next whitespace, and
/// spaces may stand around the `=`, as libpq reads it.
fn redact_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(value_at) = password_value_at(rest) {
        out.push_str(&rest[..value_at]);
        out.push_str("***");
        rest = &rest[value_at..];
        rest = &rest[value_len(rest)..];
    }
    out.push_str(rest);
    out
}

/// Where the value of the first `password` key of `text` starts.
fn password_value_at(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("password").map(|i| from + i) {
        from = i + "password".len();
        let word_start = text[..i]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let after = text[from..].trim_start();
        if word_start && after.starts_with('=') {
            let value = after[1..].trim_start();
            return Some(text.len() - value.len());
        }
    }
    None
}

/// The length of the value `text` starts with: a quoted one up to its closing quote, or up
/// to the next whitespace; a `\` escapes the character after it.
fn value_len(text: &str) -> usize {
    let quoted = text.starts_with('\'');
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(usize::from(quoted)) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' if quoted => return i + 1,
            c if !quoted && c.is_whitespace() => return i,
            _ => {}
        }
    }
    text.len()
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

    use super::{redact, without_password};

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

    #[test]
    fn no_password_shows_whatever_characters_it_holds() {
        // Passwords with the URL's own delimiters, escaped or not, and wherever they sit.
        let secrets = [
            "s3cr3t", "p@ss", "a:b:c", "50%off", "%40", "p#ss", "x@y:z%2F",
        ];
        for secret in secrets {
            let escaped: String = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect();
            for (url, expected) in [
                (
                    format!("postgres://u:{secret}@h:5432/db"),
                    "postgres://u:***@h:5432/db".to_string(),
                ),
                (
                    format!("postgres://u:{escaped}@h/db?sslmode=disable"),
                    "postgres://u:***@h/db?sslmode=disable".to_string(),
                ),
                (
                    format!("postgresql://u:{secret}@[::1]:5433/db"),
                    "postgresql://u:***@[::1]:5433/db".to_string(),
                ),
                (
                    format!("postgres://u@h/db?sslmode=require&password={escaped}&x=1"),
                    "postgres://u@h/db?sslmode=require&password=***&x=1".to_string(),
                ),
                (
                    format!("postgres://u:{secret}@h/db?password={escaped}"),
                    "postgres://u:***@h/db?password=***".to_string(),
                ),
                (
                    format!("postgres://u:{secret}@h1:5432,h2:5433/db?pass%77ord={escaped}"),
                    "postgres://u:***@h1:5432,h2:5433/db?pass%77ord=***".to_string(),
                ),
            ] {
                let shown = redact(&url);
                assert_eq!(shown, expected, "{url}");
                let printable = without_password(&url).unwrap();
                assert!(!printable.contains(secret) && !printable.contains(&escaped));
                assert!(!printable.contains("***") && !printable.contains("password="));
            }
        }
        for (text, expected) in [
            (
                "host=h password=secret user=u",
                "host=h password=*** user=u",
            ),
            (
                "host=h password = 'se cr\\'et' user=u",
                "host=h password = *** user=u",
            ),
            ("password=a\\ b dbname=d", "password=*** dbname=d"),
            ("mypassword=x password=y", "mypassword=x password=***"),
        ] {
            assert_eq!(redact(text), expected, "{text}");
        }
        assert_eq!(redact("postgres://u@[::1]/db"), "postgres://u@[::1]/db");
        assert_eq!(without_password("postgres://u@[::1]/db"), None);
    }
}
