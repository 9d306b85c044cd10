//! `codemode.toml`: the schema accepts the documented shape, and names the file, line and key
//! of what it refuses, saying what to write instead of an old shape.

use codemode::kind::HostResources;
use codemode_mcp::{EnvValue, McpConfig, McpTransport};
use codemode_openapi::OpenApiConfig;
use codemode_server::config::{builtin_kinds, Config, DEFAULT_LISTEN};
use std::path::Path;

fn error(text: &str) -> String {
    Config::parse(text, "c.toml").unwrap_err().to_string()
}

#[test]
fn example_config_loads_into_the_connector_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../codemode.example.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let config = Config::parse(&text, "codemode.example.toml").unwrap();
    assert_eq!(config.listen.as_deref(), Some(DEFAULT_LISTEN));
    let github = &config.connectors["github"];
    assert_eq!((github.kind(), github.name()), ("mcp", "github"));
    assert_eq!(github.hint(), Some("GitHub issues and pull requests"));
    assert_eq!(
        github.settings().approval.allow,
        vec!["add_issue_comment".to_string()]
    );
    assert_eq!(github.settings().reverts[0].tool, "create_issue");
    assert!(github.settings().tools.contains_key("find_issues"));
    let tool = config.tool.options();
    assert_eq!(tool.max_description_tokens, Some(2_000));
    assert!(tool.description.is_some_and(|d| d.contains("{{types}}")));
    let Some(github) = github.config::<McpConfig>() else {
        panic!("github is not an MCP connector: {:?}", config.connectors);
    };
    let McpTransport::Stdio {
        command, args, env, ..
    } = &github.transport
    else {
        panic!("github is not started as a process: {:?}", github.transport);
    };
    assert_eq!(command, "npx");
    assert_eq!(args[0], "-y");
    assert_eq!(
        env["GITHUB_PERSONAL_ACCESS_TOKEN"],
        EnvValue::FromEnv("GITHUB_TOKEN".into())
    );
    assert_eq!(github.rename["search_issues"], "find_issues");
    let petstore = &config.connectors["petstore"];
    assert_eq!((petstore.kind(), petstore.name()), ("openapi", "petstore"));
    assert_eq!(
        petstore.settings().approval.allow,
        vec!["addPet".to_string()]
    );
    assert_eq!(petstore.hint(), Some("the pet store"));
    assert_eq!(petstore.max_in_flight(), Some(4));
    assert_eq!(
        petstore.call_timeout(),
        Some(std::time::Duration::from_secs(30))
    );
    let Some(petstore) = petstore.config::<OpenApiConfig>() else {
        panic!("petstore is not an OpenAPI connector");
    };
    assert_eq!(petstore.spec, "./petstore.yaml");
    assert_eq!(petstore.headers["User-Agent"], "codemode");
    // The `[workspace]` section is a connector of the workspace kind, started last.
    let all = config.connectors_to_start().unwrap();
    let names: Vec<(&str, &str)> = all.iter().map(|c| (c.name(), c.kind())).collect();
    assert_eq!(
        names,
        [
            ("docs", "mcp"),
            ("github", "mcp"),
            ("petstore", "openapi"),
            ("state", "workspace")
        ]
    );
}

#[test]
fn unknown_key_names_line_and_field() {
    let err = error("store = \"sqlite:x.db\"\n[limits]\ntimeout = 5\n");
    assert!(err.contains("c.toml"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("timeout"), "{err}");
    let err = error("[connectors.x]\ntype = \"openapi\"\nspec = \"s.json\"\nbase = \"http://h\"\n");
    assert!(
        err.contains("connectors.x") && err.contains("`base`"),
        "{err}"
    );
    let err = error("[connectors.x]\ntype = \"mcp\"\nurl = \"http://h\"\nbearer = \"T\"\n");
    assert!(
        err.contains("connectors.x") && err.contains("`bearer`"),
        "{err}"
    );
}

#[test]
fn the_tool_description_budget_is_read_and_must_be_a_count() {
    let config = Config::parse("[tool]\nmax_description_tokens = 500\n", "c.toml").unwrap();
    assert_eq!(config.tool.options().max_description_tokens, Some(500));
    assert_eq!(config.tool.options().description, None);
    let e = error("[tool]\nmax_description_tokens = \"lots\"\n");
    assert!(e.contains("max_description_tokens"), "{e}");
}

#[test]
fn wrong_type_names_field() {
    let err = error("[limits]\nmemory_mb = \"big\"\n");
    assert!(err.contains("memory_mb") && err.contains("line 2"), "{err}");
}

#[test]
fn the_old_array_of_connectors_says_what_to_write() {
    let err = error("[[connectors.mcp]]\nname = \"github\"\n[connectors.mcp.transport]\ntype = \"stdio\"\ncommand = \"npx\"\n");
    assert!(err.contains("c.toml") && err.contains("line 1"), "{err}");
    assert!(err.contains("[[connectors.mcp]]"), "{err}");
    assert!(
        err.contains("[connectors.NAME]") && err.contains("type = \"mcp\""),
        "{err}"
    );
}

#[test]
fn the_old_command_list_says_what_to_write() {
    let err = error("[connectors.gh]\ntype = \"mcp\"\ncommand = [\"npx\", \"-y\", \"srv\"]\n");
    assert!(
        err.contains("connectors.gh") && err.contains("line 1"),
        "{err}"
    );
    assert!(
        err.contains(r#"command = "npx" and args = ["-y", "srv"]"#),
        "{err}"
    );
    let err =
        error("[connectors.gh]\ntype = \"mcp\"\ncommand = [\"npx\", \"-y\"]\nargs = [\"srv\"]\n");
    assert!(err.contains("`args` is given as well"), "{err}");
}

#[test]
fn the_old_nested_transport_says_what_to_write() {
    let err = error("[connectors.gh]\ntype = \"mcp\"\n[connectors.gh.transport]\ntype = \"stdio\"\ncommand = \"npx\"\n");
    assert!(
        err.contains("connectors.gh") && err.contains("`transport`"),
        "{err}"
    );
    assert!(err.contains("`command` (a string)"), "{err}");
}

#[test]
fn a_transport_is_given_exactly_once() {
    let err = error("[connectors.gh]\ntype = \"mcp\"\ncommand = \"npx\"\nurl = \"http://h/mcp\"\n");
    assert!(err.contains("exactly one of `command`"), "{err}");
    let err = error("[connectors.gh]\ntype = \"mcp\"\n");
    assert!(err.contains("exactly one of `command`"), "{err}");
    let err =
        error("[connectors.gh]\ntype = \"mcp\"\nurl = \"http://x\"\nenv = { TOKEN = \"abc\" }\n");
    assert!(err.contains("`env`") && err.contains("`command`"), "{err}");
}

#[test]
fn a_name_other_than_the_key_is_refused() {
    let err = error("[connectors.gh]\ntype = \"openapi\"\nspec = \"s.json\"\nname = \"other\"\n");
    assert!(
        err.contains("connectors.gh: ") && err.contains("connectors.other"),
        "{err}"
    );
}

#[test]
fn an_unknown_connector_type_is_refused_listing_the_kinds() {
    let err = error("[connectors.gh]\ntype = \"grpc\"\n");
    assert!(err.contains("c.toml") && err.contains("line 1"), "{err}");
    assert!(
        err.contains("connectors.gh: unknown connector type \"grpc\""),
        "{err}"
    );
    assert!(
        err.contains(r#"the registered kinds are "mcp", "openapi", "workspace""#),
        "{err}"
    );
    let err = error("[connectors.gh]\nurl = \"http://h/mcp\"\n");
    assert!(
        err.contains("connectors.gh: no `type`") && err.contains("\"openapi\""),
        "{err}"
    );
}

#[test]
fn a_shared_key_is_named_in_full() {
    let err = error("runtime = \"r\"\n[connectors.gh]\ntype = \"mcp\"\nurl = \"http://h\"\ntimeout_ms = \"soon\"\n");
    assert!(err.contains("line 2"), "{err}");
    assert!(
        err.contains("connectors.gh.timeout_ms: invalid type"),
        "{err}"
    );
    let err = error("[connectors.gh]\ntype = \"openapi\"\nspec = \"s\"\nmax_in_flight = 0\n");
    assert!(
        err.contains("connectors.gh.max_in_flight") && err.contains("use at least 1"),
        "{err}"
    );
    let err = error("[connectors.gh]\ntype = \"mcp\"\nurl = \"http://h\"\ntimeout_ms = 0\n");
    assert!(err.contains("would fail every call"), "{err}");
}

#[test]
fn a_workspace_is_a_connector_kind_of_its_own() {
    let config = Config::parse(
        "[workspace]\nenabled = false\n[connectors.files]\ntype = \"workspace\"\nworkspace = \"notes\"\nhint = \"notes\"\n",
        "c.toml",
    )
    .unwrap();
    let files = &config.connectors["files"];
    assert_eq!(
        files
            .config::<codemode_workspace::WorkspaceOptions>()
            .unwrap()
            .workspace,
        "notes"
    );
    assert_eq!(config.connectors_to_start().unwrap().len(), 1);
    // Its tools decide their own approval: a policy key is refused, by name.
    let err = error(
        "[connectors.files]\ntype = \"workspace\"\n[connectors.files.approval]\nallow = [\"*\"]\n",
    );
    assert!(
        err.contains(
            "connectors.files.approval: connectors of type \"workspace\" take no `approval`"
        ),
        "{err}"
    );
    let err = error("[connectors.files]\ntype = \"workspace\"\nquota = 5\n");
    assert!(
        err.contains("connectors.files: unknown field `quota`"),
        "{err}"
    );
}

#[test]
fn the_workspace_global_is_not_taken_twice() {
    let mut config = Config::parse("", "c.toml").unwrap();
    let mcp = McpConfig::new("state", McpTransport::http("http://h/mcp"));
    config.add(codemode_mcp::McpKind::config(mcp).unwrap());
    let err = config.connectors_to_start().unwrap_err().to_string();
    assert!(
        err.contains("[workspace]") && err.contains("workspace.enabled = false"),
        "{err}"
    );
}

#[test]
fn a_missing_secret_names_the_key_and_the_variable() {
    let config = Config::parse(
        "[connectors.gh]\ntype = \"mcp\"\ncommand = \"srv\"\nenv = { TOKEN = { env = \"CODEMODE_TEST_SURELY_UNSET\" }, MODE = \"ro\" }\n",
        "c.toml",
    )
    .unwrap();
    let err = config.connectors["gh"]
        .check_secrets()
        .unwrap_err()
        .to_string();
    assert!(err.contains("connectors.gh.env.TOKEN"), "{err}");
    assert!(err.contains("CODEMODE_TEST_SURELY_UNSET"), "{err}");
}

#[test]
fn store_as_a_string_or_a_table() {
    let c = Config::parse("[store]\nurl = \"postgres://u@h/db\"\n", "c.toml").unwrap();
    assert_eq!(c.store.as_deref(), Some("postgres://u@h/db"));
    let c = Config::parse("store = \"sqlite:x.db\"\n", "c.toml").unwrap();
    assert_eq!(c.store.as_deref(), Some("sqlite:x.db"));
    let err = error("[store]\nurll = \"x\"\n");
    assert!(err.contains("url") && err.contains("c.toml"), "{err}");
}

#[test]
fn a_bad_listen_address_names_the_field() {
    let err = error("listen = \"localhost\"\n");
    assert!(
        err.contains("`listen`") && err.contains("127.0.0.1:7357"),
        "{err}"
    );
}

/// Why a connector failed to start is shown to the model and printed: a secret it was given
/// is scrubbed from it, wherever the failure echoed it (here, a URL that holds it).
#[tokio::test]
async fn a_start_failure_holds_no_secret() {
    std::env::set_var("CODEMODE_TEST_START_TOKEN", "s3cr3t-t0ken-value");
    let config = Config::parse(
        "[connectors.gh]\ntype = \"mcp\"\nurl = \"http://127.0.0.1:9/s3cr3t-t0ken-value/mcp\"\nbearer_token_env = \"CODEMODE_TEST_START_TOKEN\"\nstartup_timeout_ms = 2000\n",
        "c.toml",
    )
    .unwrap();
    let kinds = builtin_kinds().unwrap();
    let started = kinds
        .start(&config.connectors["gh"], &HostResources::new())
        .await;
    let Err(err) = started else {
        panic!("nothing listens on port 9");
    };
    let err = err.to_string();
    assert!(err.contains("connectors.gh"), "{err}");
    assert!(!err.contains("s3cr3t-t0ken-value"), "{err}");

    // Started into a runtime, the connector is a global whose calls say why it failed, and
    // the tool description lists it as unavailable: neither holds the secret.
    let dir = tempfile::tempdir().unwrap();
    let store =
        std::sync::Arc::new(codemode_sqlite::SqliteStore::open(dir.path().join("c.db")).unwrap());
    let executor = std::sync::Arc::new(codemode_quickjs::QuickJsExecutor::default());
    let started = codemode_server::start_connectors(
        &kinds,
        &[config.connectors["gh"].clone()],
        &HostResources::new(),
        codemode::Runtime::builder(store, executor),
    )
    .await;
    assert_eq!(started.failed.len(), 1);
    let runtime = started.builder.build().unwrap();
    let description = runtime.tool().description;
    assert!(
        description.contains("- gh: unavailable, it failed to start (connectors.gh"),
        "{description}"
    );
    assert!(!description.contains("s3cr3t-t0ken-value"), "{description}");
    let outcome = runtime
        .call("return await gh.list_repos({})")
        .await
        .unwrap();
    let codemode::Outcome::Error { error, code, .. } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        error.starts_with("Error: connector gh failed to start: connectors.gh"),
        "{error}"
    );
    assert!(!error.contains("s3cr3t-t0ken-value"), "{error}");
    assert_eq!(code, codemode::ErrorCode::Unavailable);
}

/// A config's text, and the `max_batch` it reads as or the words its error holds.
type MaxBatchCase<'a> = (&'a str, Result<Option<usize>, &'a [&'a str]>);

#[test]
fn approvals_max_batch_is_read_and_refused_at_zero_and_past_its_limit() {
    let cases: &[MaxBatchCase] = &[
        ("", Ok(None)),
        ("[approvals]\nmax_batch = 1\n", Ok(Some(1))),
        ("[approvals]\nmax_batch = 25\n", Ok(Some(25))),
        ("[approvals]\nmax_batch = 1000\n", Ok(Some(1000))),
        (
            "[approvals]\nmax_batch = 0\n",
            Err(&["approvals.max_batch = 0", "use at least 1"]),
        ),
        (
            "[approvals]\nmax_batch = 1001\n",
            Err(&["approvals.max_batch = 1001", "use at most 1000"]),
        ),
        (
            "[approvals]\nmax_batch = -1\n",
            Err(&["max_batch = -1", "invalid value"]),
        ),
    ];
    for (text, want) in cases {
        match (Config::parse(text, "c.toml"), want) {
            (Ok(config), Ok(n)) => assert_eq!(config.approvals.max_batch, *n, "{text}"),
            (Err(e), Err(parts)) => {
                let e = e.to_string();
                for part in *parts {
                    assert!(e.contains(part), "{text}: {e}");
                }
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}
