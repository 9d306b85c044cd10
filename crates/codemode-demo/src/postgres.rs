//! The demo's tables in a PostgreSQL database, on a small pool of the demo's own.

use crate::error::{tool_error, DemoError};
use codemode::ToolError;
use serde_json::{json, Value};
use std::str::FromStr;

/// The demo's tables in a PostgreSQL database (a small pool of its own).
#[derive(Clone)]
pub struct PgTasks {
    pool: deadpool_postgres::Pool,
}

fn task_row(r: &tokio_postgres::Row) -> Value {
    json!({"id": r.get::<_, i64>(0), "title": r.get::<_, String>(1), "done": r.get::<_, bool>(2)})
}

impl PgTasks {
    /// Connects to `url` (the store's) with a pool of its own, and creates the demo tables if
    /// needed, under an advisory lock so that nodes starting at once do not race. Without a
    /// password in the URL, `PGPASSWORD` gives it (as for the store).
    pub async fn open(url: &str) -> Result<PgTasks, DemoError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| {
            DemoError(format!(
                "the store URL is not a PostgreSQL URL, so the demo tasks cannot use it: {e}"
            ))
        })?;
        if config.get_password().is_none() {
            if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
                config.password(password);
            }
        }
        let shown = location(&config);
        let manager = deadpool_postgres::Manager::from_config(
            config,
            tokio_postgres::NoTls,
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(4)
            .build()
            .map_err(|e| {
                DemoError(format!(
                    "cannot make a pool for the demo tasks on {shown}: {e}"
                ))
            })?;
        let client = pool
            .get()
            .await
            .map_err(|e| DemoError(format!("cannot connect to {shown} for the demo tasks: {e}")))?;
        client
            .batch_execute(
                "BEGIN;
                 SELECT pg_advisory_xact_lock(7357001);
                 CREATE TABLE IF NOT EXISTS demo_tasks (
                     id BIGSERIAL PRIMARY KEY,
                     title TEXT NOT NULL,
                     done BOOLEAN NOT NULL DEFAULT FALSE,
                     call_key TEXT UNIQUE
                 );
                 CREATE TABLE IF NOT EXISTS demo_notes (
                     id BIGSERIAL PRIMARY KEY,
                     text TEXT NOT NULL,
                     call_key TEXT UNIQUE
                 );
                 COMMIT;",
            )
            .await
            .map_err(|e| DemoError(format!("cannot create the demo tables on {shown}: {e}")))?;
        Ok(PgTasks { pool })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, ToolError> {
        self.pool.get().await.map_err(tool_error)
    }

    /// Every task and note.
    pub async fn list(&self) -> Result<Value, ToolError> {
        let c = self.client().await?;
        let tasks = c
            .query("SELECT id, title, done FROM demo_tasks ORDER BY id", &[])
            .await
            .map_err(tool_error)?;
        let notes = c
            .query("SELECT id, text FROM demo_notes ORDER BY id", &[])
            .await
            .map_err(tool_error)?;
        let tasks: Vec<Value> = tasks.iter().map(task_row).collect();
        let notes: Vec<Value> = notes
            .iter()
            .map(|r| json!({"id": r.get::<_, i64>(0), "text": r.get::<_, String>(1)}))
            .collect();
        Ok(json!({"tasks": tasks, "notes": notes}))
    }

    /// Creates a task once per call key (a re-run after a crash finds the same task).
    pub async fn create(&self, title: &str, key: &str) -> Result<Value, ToolError> {
        let c = self.client().await?;
        c.execute(
            "INSERT INTO demo_tasks (title, call_key) VALUES ($1, $2) ON CONFLICT (call_key) DO NOTHING",
            &[&title, &key],
        )
        .await
        .map_err(tool_error)?;
        let row = c
            .query_one(
                "SELECT id, title, done FROM demo_tasks WHERE call_key = $1",
                &[&key],
            )
            .await
            .map_err(tool_error)?;
        Ok(task_row(&row))
    }

    /// Marks a task done (or open again); an unknown id is an error the code can catch.
    pub async fn set_done(&self, id: i64, done: bool) -> Result<Value, ToolError> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "UPDATE demo_tasks SET done = $2 WHERE id = $1 RETURNING id, title, done",
                &[&id, &done],
            )
            .await
            .map_err(tool_error)?;
        row.map(|r| task_row(&r))
            .ok_or_else(|| ToolError(format!("no task with id {id}")))
    }

    /// Deletes a task (the revert of `create_task`).
    pub async fn delete(&self, id: i64) -> Result<(), ToolError> {
        let c = self.client().await?;
        c.execute("DELETE FROM demo_tasks WHERE id = $1", &[&id])
            .await
            .map_err(tool_error)
            .map(|_| ())
    }

    /// Adds a note once per call key.
    pub async fn add_note(&self, text: &str, key: &str) -> Result<Value, ToolError> {
        let c = self.client().await?;
        c.execute(
            "INSERT INTO demo_notes (text, call_key) VALUES ($1, $2) ON CONFLICT (call_key) DO NOTHING",
            &[&text, &key],
        )
        .await
        .map_err(tool_error)?;
        let r = c
            .query_one(
                "SELECT id, text FROM demo_notes WHERE call_key = $1",
                &[&key],
            )
            .await
            .map_err(tool_error)?;
        Ok(json!({"id": r.get::<_, i64>(0), "text": r.get::<_, String>(1)}))
    }

    /// Removes a note (the revert of `add_note`).
    pub async fn delete_note(&self, id: i64) -> Result<(), ToolError> {
        let c = self.client().await?;
        c.execute("DELETE FROM demo_notes WHERE id = $1", &[&id])
            .await
            .map_err(tool_error)
            .map(|_| ())
    }
}

/// Where `config` connects, as shown to a person: `postgres://USER@HOST:PORT/DATABASE`,
/// never with the password.
fn location(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => dir.display().to_string(),
            };
            match ports.get(i).or(ports.first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let database = config.get_dbname().unwrap_or_default();
    format!("postgres://{user}{}/{database}", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::location;
    use std::str::FromStr;

    #[test]
    fn the_location_shown_never_holds_the_password() {
        for (url, shown) in [
            (
                "postgres://u:s3cret@db.example:6543/tasks",
                "postgres://u@db.example:6543/tasks",
            ),
            (
                "postgres://u@h1,h2/d?password=s3cret",
                "postgres://u@h1:5432,h2:5432/d",
            ),
            (
                "host=h port=5433 user=u password=s3cret dbname=d",
                "postgres://u@h:5433/d",
            ),
        ] {
            let config = tokio_postgres::Config::from_str(url).unwrap();
            assert_eq!(location(&config), shown, "{url}");
        }
    }
}
