//! Records the upgrade fixtures with this build: the fixture executions (see
//! `codemode_conformance::upgrade`) into a new SQLite file and a new PostgreSQL database,
//! one of them left `running` by a node (a child process of this program) that dies inside a
//! write. Writes `codemode.db` (compacted), `postgres.sql` (`pg_dump`) and `expected.json`
//! (what the test does with each execution, and what it must produce, as this build
//! produces it on copies of both, which must agree) to a new fixture directory.
//!
//! Usage: `upgrade-fixtures [--out DIR] [--postgres URL] [--replace]`. `DIR` defaults to
//! `fixtures/upgrade/v<release>-sqlite<version>-postgres<version>/` of this crate; `URL` is a
//! server where scratch databases may be created (default `CODEMODE_TEST_POSTGRES_URL`, else
//! the local test server); an existing directory is kept unless `--replace` is given.

use codemode::{ExecutionStatus, Store};
use codemode_conformance::probe::Probe;
use codemode_conformance::upgrade::{
    clean_dump, differences, exercise, fixture_dir_name, fixture_runtime, fixtures_root, load_dump,
    plan, record, record_interrupted, Expected, SchemaVersions, EXPECTED_FILE, INTERRUPTED_ID,
    INTERRUPTED_STATES, POSTGRES_FILE, RUNTIME_NAME, SQLITE_FILE,
};
use codemode_postgres::{PostgresStore, ScratchDatabase};
use codemode_sqlite::SqliteStore;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;

/// The hidden first argument that makes this program the node that dies.
const CRASH_NODE: &str = "__crash-node";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CRASH_NODE) {
        return crash_node(&args[1..]).await;
    }
    match run(&args).await {
        Ok(dir) => {
            println!("wrote the upgrade fixtures to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("upgrade-fixtures: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line options.
struct Options {
    out: PathBuf,
    postgres: String,
    replace: bool,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        out: fixtures_root().join(fixture_dir_name()),
        postgres: std::env::var("CODEMODE_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| codemode_postgres::DEFAULT_TEST_URL.to_string()),
        replace: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => options.out = args.next().ok_or("--out needs a directory")?.into(),
            "--postgres" => {
                options.postgres = args.next().ok_or("--postgres needs a URL")?.clone()
            }
            "--replace" => options.replace = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: upgrade-fixtures [--out DIR] [--postgres URL] [--replace]"
                ))
            }
        }
    }
    Ok(options)
}

async fn run(args: &[String]) -> Result<PathBuf, String> {
    let options = options(args)?;
    if options.out.exists() && !options.replace {
        return Err(format!(
            "{} exists: the fixtures of a release are kept as recorded. Give --replace to \
             record them again (only while they are not yet committed), or --out for another \
             directory",
            options.out.display()
        ));
    }
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let staged = tmp.path().join("fixture");
    std::fs::create_dir(&staged).map_err(|e| format!("{}: {e}", staged.display()))?;

    // SQLite: record into a new file, then keep a compacted copy of it.
    let recorded = tmp.path().join("recorded.db");
    record_into(path_text(&recorded)?, tmp.path()).await?;
    compact(&recorded, &staged.join(SQLITE_FILE))?;

    // PostgreSQL: record into a scratch database, then dump it.
    let source = ScratchDatabase::create(&options.postgres)
        .await
        .map_err(|e| format!("a scratch database: {e}"))?;
    record_into(source.url(), tmp.path()).await?;
    let dump = pg_dump(source.url())?;
    std::fs::write(staged.join(POSTGRES_FILE), &dump)
        .map_err(|e| format!("writing the dump: {e}"))?;
    drop(source);

    // What this build makes of copies of both; they must agree.
    let steps = plan();
    let copy = tmp.path().join("exercised.db");
    std::fs::copy(staged.join(SQLITE_FILE), &copy).map_err(|e| format!("copying: {e}"))?;
    let store = SqliteStore::open(&copy).map_err(|e| e.to_string())?;
    let on_sqlite = exercise(Arc::new(store), &tmp.path().join("ledger-sqlite"), &steps).await?;
    let target = ScratchDatabase::create(&options.postgres)
        .await
        .map_err(|e| format!("a scratch database: {e}"))?;
    load_dump(target.url(), &dump).await?;
    let store = PostgresStore::connect(target.url())
        .await
        .map_err(|e| e.to_string())?;
    let on_postgres = exercise(Arc::new(store), &tmp.path().join("ledger-pg"), &steps).await?;
    let differ = differences(&on_sqlite, &on_postgres, 20);
    if !differ.is_empty() {
        return Err(format!(
            "the stores disagree (SQLite wanted, PostgreSQL got):\n{}",
            differ.join("\n")
        ));
    }
    let expected = Expected {
        recorded_by: format!("codemode {}", env!("CARGO_PKG_VERSION")),
        schema: SchemaVersions {
            sqlite: codemode_sqlite::SCHEMA_VERSION,
            postgres: codemode_postgres::SCHEMA_VERSION,
        },
        steps,
        outcomes: on_sqlite,
    };
    let text = serde_json::to_string_pretty(&expected).map_err(|e| e.to_string())? + "\n";
    std::fs::write(staged.join(EXPECTED_FILE), text).map_err(|e| e.to_string())?;

    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("creating {}: {e}", options.out.display()))?;
    for file in [SQLITE_FILE, POSTGRES_FILE, EXPECTED_FILE] {
        std::fs::copy(staged.join(file), options.out.join(file))
            .map_err(|e| format!("writing {}: {e}", options.out.join(file).display()))?;
    }
    Ok(options.out)
}

/// Records every fixture execution into the store at `db` (a SQLite path or a PostgreSQL
/// URL), the interrupted one by a child process that dies inside its write, and checks the
/// dead node left it as planned.
async fn record_into(db: &str, tmp: &Path) -> Result<(), String> {
    let journal = tmp.join("ledger-recorded");
    {
        let probe = Probe::default();
        let runtime = fixture_runtime(open(db).await?, &probe, &journal)
            .map_err(|e| format!("runtime: {e}"))?;
        record(&runtime).await?;
    }
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let status = Command::new(exe)
        .args([CRASH_NODE, db, path_text(&journal)?])
        .status()
        .map_err(|e| format!("starting the node that dies: {e}"))?;
    if status.success() || status.code() == Some(3) {
        return Err(format!(
            "the node that should die inside its write ended {status}"
        ));
    }
    let store = open(db).await?;
    let run = store
        .execution(RUNTIME_NAME, INTERRUPTED_ID)
        .await
        .map_err(|e| e.to_string())?
        .ok_or(format!("the dead node left no {INTERRUPTED_ID}"))?;
    let states: Vec<&str> = run.log.iter().map(|e| e.state.as_str()).collect();
    if run.status != ExecutionStatus::Running || states != INTERRUPTED_STATES {
        return Err(format!(
            "the dead node left {INTERRUPTED_ID} {} with {states:?}, want running with {INTERRUPTED_STATES:?}",
            run.status
        ));
    }
    Ok(())
}

/// The node that dies: `__crash-node DB JOURNAL`.
async fn crash_node(args: &[String]) -> ExitCode {
    let [db, journal] = args else {
        eprintln!("usage: upgrade-fixtures {CRASH_NODE} DB JOURNAL");
        return ExitCode::from(2);
    };
    let store = match open(db).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("{CRASH_NODE}: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = record_interrupted(store, Path::new(journal)).await {
        eprintln!("{CRASH_NODE}: {e}");
    }
    ExitCode::from(3)
}

async fn open(db: &str) -> Result<Arc<dyn Store>, String> {
    if db.starts_with("postgres://") {
        let store = PostgresStore::connect(db)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(store))
    } else {
        Ok(Arc::new(SqliteStore::open(db).map_err(|e| e.to_string())?))
    }
}

/// Writes a compacted copy of the SQLite file `from` to `to`, as one file (no WAL).
fn compact(from: &Path, to: &Path) -> Result<(), String> {
    let conn = rusqlite::Connection::open(from).map_err(|e| format!("{}: {e}", from.display()))?;
    conn.execute("VACUUM INTO ?1", [path_text(to)?])
        .map_err(|e| format!("compacting into {}: {e}", to.display()))?;
    drop(conn);
    let conn = rusqlite::Connection::open(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .map_err(|e| format!("{}: {e}", to.display()))?;
    if mode != "delete" {
        return Err(format!("{} stays in journal mode {mode}", to.display()));
    }
    Ok(())
}

/// The database at `url` as a plain SQL dump, without owners, privileges or `psql`
/// meta-commands.
fn pg_dump(url: &str) -> Result<String, String> {
    let output = Command::new("pg_dump")
        .args([
            "--no-owner",
            "--no-privileges",
            "--no-comments",
            "--column-inserts",
            "--dbname",
            url,
        ])
        .output()
        .map_err(|e| format!("running pg_dump (is it installed?): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "pg_dump ended {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let text = String::from_utf8(output.stdout).map_err(|e| format!("pg_dump's output: {e}"))?;
    Ok(clean_dump(&text))
}

fn path_text(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or(format!("{} is not UTF-8", path.display()))
}
