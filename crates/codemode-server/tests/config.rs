//! `codemode.toml`: the schema accepts the documented shape, and names the file, line and key
//! of what it refuses, saying what to write instead of an old shape.

use codemode_mcp::{EnvValue, McpTransport};
use codemode_server::config::{Config, ConnectorConfig, DEFAULT_LISTEN};
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
    let Some(ConnectorConfig::Mcp(github)) = config.connectors.get("github") else {
        panic!("github is not an MCP connector: {:?}", config.connectors);
    };
    assert_eq!(github.name, "github");
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
    let Some(ConnectorConfig::Openapi(petstore)) = config.connectors.get("petstore") else {
        panic!("petstore is not an OpenAPI connector");
    };
    assert_eq!(petstore.name, "petstore");
    assert_eq!(petstore.approval.allow, vec!["addPet".to_string()]);
    assert_eq!(petstore.hint.as_deref(), Some("the pet store"));
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
        err.contains("connectors.gh") && err.contains("[connectors.other]"),
        "{err}"
    );
}

#[test]
fn an_unknown_connector_type_is_refused() {
    let err = error("[connectors.gh]\ntype = \"grpc\"\n");
    assert!(err.contains("grpc") && err.contains("mcp"), "{err}");
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
    let Err(err) = codemode_server::start_connector(&config.connectors["gh"]).await else {
        panic!("nothing listens on port 9");
    };
    let err = err.to_string();
    assert!(err.contains("connectors.gh"), "{err}");
    assert!(!err.contains("s3cr3t-t0ken-value"), "{err}");
}
