//! Throwaway databases for tests and benchmarks: created with a random name, dropped on drop.

use crate::connect::redact;
use crate::error::describe;
use codemode::StoreError;
use tokio_postgres::NoTls;

/// The server the tests use unless `CODEMODE_TEST_POSTGRES_URL` names another.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A database that exists until this value is dropped.
#[derive(Debug)]
pub struct ScratchDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl ScratchDatabase {
    /// Creates a database named `codemode_test_<random>` on the server of `admin_url`.
    pub async fn create(admin_url: &str) -> Result<ScratchDatabase, StoreError> {
        let name = format!("codemode_test_{}", uuid::Uuid::new_v4().simple());
        let client = admin(admin_url).await?;
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|e| {
                StoreError::Backend(format!(
                    "creating database {name} on {}: {}",
                    redact(admin_url),
                    describe(&e)
                ))
            })?;
        let url = with_database(admin_url, &name);
        Ok(ScratchDatabase {
            admin_url: admin_url.to_string(),
            name,
            url,
        })
    }

    /// For tests: a scratch database on the test server, or `None` (after a loud SKIPPED
    /// line on stderr) when no server answers. When the environment variable `CI` is set an
    /// unreachable server is an error instead: CI must never skip these tests.
    pub async fn for_tests(test: &str) -> Result<Option<ScratchDatabase>, StoreError> {
        let url = std::env::var("CODEMODE_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| DEFAULT_TEST_URL.to_string());
        match Self::create(&url).await {
            Ok(db) => Ok(Some(db)),
            Err(e) if codemode_testkit::required() => Err(StoreError::Backend(format!(
                "CI is set and the PostgreSQL test server is not usable: {e}"
            ))),
            Err(e) => {
                codemode_testkit::missing(
                    &format!("a PostgreSQL test server for {test} ({e})"),
                    "start one with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) \
                     main start`, or set CODEMODE_TEST_POSTGRES_URL",
                );
                Ok(None)
            }
        }
    }

    /// The URL of the scratch database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        // Drop may run inside a runtime (or while unwinding): use a thread with its own.
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let client = admin(&admin_url).await.map_err(|e| e.to_string())?;
                client.batch_execute(&sql).await.map_err(|e| describe(&e))
            })
        })
        .join();
        if let Ok(Err(e)) = done {
            eprintln!("could not drop scratch database {}: {e}", self.name);
        }
    }
}

/// One plain connection (no pool) for administrative statements.
async fn admin(url: &str) -> Result<tokio_postgres::Client, StoreError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(|e| {
        StoreError::Backend(format!("connecting to {}: {}", redact(url), describe(&e)))
    })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// `url` pointing at database `name` instead (URL form only).
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    format!("{}/{name}{query}", &base[..path_start])
}
