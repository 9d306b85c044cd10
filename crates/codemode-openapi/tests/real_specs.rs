//! Parsing and method generation for real documents: GitHub's REST API (3.0, 1,223 operations)
//! and ReadMe's API (3.1).

mod support;

use codemode::Connector;
use codemode_openapi::{OpenApiConfig, OpenApiConnector};
use std::time::Instant;

#[tokio::test]
async fn github_rest_api() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let path = dir.join("@octokit/openapi/generated/api.github.com.json");
    let started = Instant::now();
    let c = OpenApiConnector::from_spec(OpenApiConfig::new("github", path.to_str().unwrap()))
        .await
        .unwrap();
    eprintln!(
        "github spec: load + index in {:?} (debug build)",
        started.elapsed()
    );
    assert_eq!(c.operation_count(), 1_223);
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    assert_eq!(c.base_url(), "https://api.github.com/");
    let tools = c.tools();
    assert_eq!(tools.len(), 1_224, "every operation plus request");
    let by = |n: &str| {
        tools
            .iter()
            .find(|t| t.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let get = by("repos_get");
    assert!(get.read_only && !get.requires_approval);
    assert_eq!(
        get.input_schema["required"],
        serde_json::json!(["owner", "repo"])
    );
    let create = by("issues_create");
    assert!(create.requires_approval && !create.read_only);
    let body = &create.input_schema["properties"]["body"];
    assert_eq!(body["required"], serde_json::json!(["title"]));
    assert!(body["properties"]["title"].is_object());
    assert!(by("repos_delete").requires_approval);
    // Every schema is self-contained: no ref into the document is left.
    for t in &tools {
        let text = serde_json::to_string(&t.input_schema).unwrap();
        assert!(
            !text.contains("#/components/"),
            "{} keeps a document ref",
            t.name
        );
        if let Some(out) = &t.output_schema {
            assert!(
                !serde_json::to_string(out)
                    .unwrap()
                    .contains("#/components/"),
                "{}",
                t.name
            );
        }
    }
}

#[tokio::test]
async fn readme_api_openapi_31() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let path = dir.join("@readme/oas-examples/3.1/json/readme.json");
    let c = OpenApiConnector::from_spec(OpenApiConfig::new("readme", path.to_str().unwrap()))
        .await
        .unwrap();
    assert!(c.operation_count() > 30, "{}", c.operation_count());
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    let tools = c.tools();
    for t in &tools {
        assert!(
            codemode::discovery::is_valid_identifier(&t.name),
            "{}",
            t.name
        );
        assert_eq!(t.read_only, !t.requires_approval, "{}", t.name);
    }
    eprintln!(
        "readme: {} methods, e.g. {:?}",
        tools.len(),
        tools.iter().take(5).map(|t| &t.name).collect::<Vec<_>>()
    );
}

/// Every GitHub schema is accepted by the runtime (validation and type generation), and a
/// read-only call's input is validated against it.
#[tokio::test]
async fn github_connector_registers_in_the_runtime() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let path = dir.join("@octokit/openapi/generated/api.github.com.json");
    let c = OpenApiConnector::from_spec(OpenApiConfig::new("github", path.to_str().unwrap()))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = codemode_sqlite::SqliteStore::open(tmp.path().join("db")).unwrap();
    let executor = codemode_quickjs::QuickJsExecutor::new(Default::default());
    let runtime =
        codemode::Runtime::builder(std::sync::Arc::new(store), std::sync::Arc::new(executor))
            .connector(c)
            .build()
            .unwrap();
    // A bad argument is refused before any request is made (api.github.com is never reached).
    let outcome = runtime
        .call("async () => { try { await github.repos_get({owner: 1}); } catch (e) { return e.message; } }")
        .await
        .unwrap();
    let codemode::Outcome::Completed { result, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    let message = result.as_str().unwrap_or_default();
    eprintln!("validation message: {message}");
    assert!(
        !message.contains("GET /repos"),
        "the request was sent: {message}"
    );
    assert!(
        message.contains("repo") || message.contains("owner"),
        "{message}"
    );
}
