//! The connector against a real HTTP server on loopback, driven from its OpenAPI document.

mod support;

use codemode::policy::{ApprovalPolicy, RevertRule};
use codemode::{CallContext, Connector};
use codemode_openapi::{ApiKeyLocation, AuthConfig, OpenApiConfig, OpenApiConnector};
use serde_json::{json, Value};

fn ctx(seq: u64) -> CallContext {
    CallContext {
        execution_id: "exec-1".into(),
        seq,
    }
}

async fn connector(base: &str, edit: impl FnOnce(&mut OpenApiConfig)) -> OpenApiConnector {
    let mut config = OpenApiConfig::new("items", "inline");
    edit(&mut config);
    let spec = support::spec_for(base).to_string();
    OpenApiConnector::from_bytes(config, spec.as_bytes()).unwrap()
}

#[tokio::test]
async fn methods_schemas_and_approval_defaults() {
    let server = support::start().await;
    let c = connector(&server.base, |_| {}).await;
    let tools = c.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "listItems",
            "createItem",
            "getItem",
            "deleteItem",
            "echo",
            "echoFail",
            "get_text",
            "slow",
            "bigError",
            "request"
        ]
    );
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    assert!(!by("listItems").requires_approval && by("listItems").read_only);
    assert!(by("createItem").requires_approval && !by("createItem").read_only);
    assert!(by("deleteItem").requires_approval);
    assert!(by("request").requires_approval, "request fails closed");
    let create = by("createItem");
    assert_eq!(create.input_schema["required"], json!(["body"]));
    assert_eq!(
        create.input_schema["properties"]["body"]["properties"]["note"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(by("getItem").input_schema["required"], json!(["id"]));
    assert!(by("listItems").output_schema.unwrap()["items"]["allOf"].is_array());
    assert_eq!(c.instructions().unwrap(), "Items\n\nA tiny item store.");

    let loose = connector(&server.base, |c| {
        c.settings.approval = ApprovalPolicy {
            allow: vec!["create*".into()],
            require: vec!["list_items".into(), "listItems".into()],
        }
    })
    .await;
    let tools = loose.tools();
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    assert!(!by("createItem").requires_approval);
    assert!(by("listItems").requires_approval);
    assert!(by("deleteItem").requires_approval);
}

#[tokio::test]
async fn calls_map_params_and_decode_responses() {
    let server = support::start().await;
    let c = connector(&server.base, |_| {}).await;
    let created = c
        .execute("createItem", json!({"body": {"name": "pen"}}), ctx(0))
        .await
        .unwrap();
    assert_eq!(created, json!({"name": "pen", "id": 1}));
    let got = c
        .execute("getItem", json!({"id": 1}), ctx(1))
        .await
        .unwrap();
    assert_eq!(got["name"], "pen");
    let list = c.execute("listItems", json!({}), ctx(2)).await.unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);

    let echo = c
        .execute(
            "echo",
            json!({"tags": ["a", "b"], "q": "x y", "X-Trace": "t-1"}),
            ctx(3),
        )
        .await
        .unwrap();
    assert_eq!(
        echo["query"],
        json!([["tags", "a"], ["tags", "b"], ["q", "x y"]])
    );
    assert_eq!(echo["headers"]["x-trace"], "t-1");

    let text = c.execute("get_text", json!({}), ctx(4)).await.unwrap();
    assert_eq!(text, json!("plain hello"));

    let deleted = c
        .execute("deleteItem", json!({"id": 1}), ctx(5))
        .await
        .unwrap();
    assert_eq!(deleted, Value::Null);

    let raw = c
        .execute(
            "request",
            json!({"method": "POST", "path": "/items", "body": {"name": "raw"}}),
            ctx(6),
        )
        .await
        .unwrap();
    assert_eq!(raw["name"], "raw");
    let err = c
        .execute("request", json!({"path": "http://127.0.0.1:1/x"}), ctx(7))
        .await
        .unwrap_err();
    assert!(err.0.contains("not a URL"), "{err}");
    let err = c.execute("nope", json!({}), ctx(8)).await.unwrap_err();
    assert!(err.0.contains("no method"), "{err}");
}

#[tokio::test]
async fn http_errors_carry_status_and_a_bounded_body() {
    let server = support::start().await;
    let c = connector(&server.base, |c| c.max_error_body = 100).await;
    let err = c
        .execute("getItem", json!({"id": 99}), ctx(0))
        .await
        .unwrap_err();
    assert!(err.0.contains("404"), "{err}");
    assert!(err.0.contains("no item 99"), "{err}");
    let err = c.execute("bigError", json!({}), ctx(1)).await.unwrap_err();
    assert!(err.0.contains("HTTP 500"), "{err}");
    assert!(err.0.len() < 300, "cut to a bound: {} chars", err.0.len());
    assert!(err.0.ends_with("(cut)"), "{err}");
}

#[tokio::test]
async fn calls_time_out() {
    let server = support::start().await;
    let c = connector(&server.base, |c| c.settings.timeout_ms = Some(300)).await;
    let started = std::time::Instant::now();
    let err = c.execute("slow", json!({}), ctx(0)).await.unwrap_err();
    assert!(err.0.contains("timed out after 300 ms"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[tokio::test]
async fn reverts_from_configuration() {
    let server = support::start().await;
    let rule = RevertRule::new("createItem", "deleteItem", json!({"id": "${result.id}"})).unwrap();
    let c = connector(&server.base, |c| c.settings.reverts = vec![rule]).await;
    let tools = c.tools();
    assert!(
        tools
            .iter()
            .find(|t| t.name == "createItem")
            .unwrap()
            .has_revert
    );
    assert!(
        !tools
            .iter()
            .find(|t| t.name == "deleteItem")
            .unwrap()
            .has_revert
    );
    let args = json!({"body": {"name": "cup"}});
    let result = c.execute("createItem", args.clone(), ctx(0)).await.unwrap();
    assert_eq!(server.api.items.lock().unwrap().len(), 1);
    c.revert("createItem", args.clone(), result.clone(), ctx(0))
        .await
        .unwrap();
    assert!(server.api.items.lock().unwrap().is_empty());
    // A second revert finds nothing to delete: the error says which call and why.
    let err = c
        .revert("createItem", args, result, ctx(0))
        .await
        .unwrap_err();
    assert!(
        err.0.contains("revert of items.createItem by deleteItem"),
        "{err}"
    );
    assert!(err.0.contains("404"), "{err}");

    let bad = RevertRule::new("createItem", "destroyItem", json!({})).unwrap();
    let mut config = OpenApiConfig::new("items", "inline");
    config.settings.reverts = vec![bad];
    let err = OpenApiConnector::from_bytes(
        config,
        support::spec_for(&server.base).to_string().as_bytes(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("destroyItem"), "{err}");
}

/// The secret must not appear anywhere the model, the log or the audit trail can see.
fn assert_clean(secret: &str, seen: &str) {
    assert!(!seen.contains(secret), "secret leaked into: {seen}");
}

#[tokio::test]
async fn secrets_stay_host_side() {
    let server = support::start().await;
    let secret = "tok-5f1c7a9e-very-secret";
    std::env::set_var("CODEMODE_TEST_BEARER", secret);
    std::env::set_var("CODEMODE_TEST_APIKEY", "key-8d2b-very-secret");
    std::env::set_var("CODEMODE_TEST_USER", "alice");
    std::env::set_var("CODEMODE_TEST_PASS", "pw-3c4d-very-secret");

    // Bearer: the server sees it, the result does not.
    let c = connector(&server.base, |c| {
        c.auth = Some(AuthConfig::Bearer {
            token_env: "CODEMODE_TEST_BEARER".into(),
        })
    })
    .await;
    let echo = c.execute("echo", json!({}), ctx(0)).await.unwrap();
    assert_eq!(echo["headers"]["authorization"], "Bearer [redacted]");
    assert_clean(secret, &echo.to_string());
    let err = c.execute("echoFail", json!({}), ctx(1)).await.unwrap_err();
    assert!(err.0.contains("403"), "{err}");
    assert_clean(secret, &err.0);
    assert_clean(secret, &format!("{c:?}"));
    for t in c.tools() {
        assert_clean(secret, &serde_json::to_string(&t.input_schema).unwrap());
    }
    // The model cannot set the credential's header itself.
    let err = c
        .execute(
            "request",
            json!({"path": "/echo", "headers": {"authorization": "x"}}),
            ctx(2),
        )
        .await
        .unwrap_err();
    assert!(err.0.contains("set by the connector"), "{err}");

    // API key in the query string: also not in errors that quote the request.
    let c = connector(&server.base, |c| {
        c.auth = Some(AuthConfig::ApiKey {
            location: ApiKeyLocation::Query,
            name: "api_key".into(),
            value_env: "CODEMODE_TEST_APIKEY".into(),
        })
    })
    .await;
    let echo = c.execute("echo", json!({"q": "1"}), ctx(3)).await.unwrap();
    assert_eq!(
        echo["query"],
        json!([["q", "1"], ["api_key", "[redacted]"]])
    );
    let err = c.execute("echoFail", json!({}), ctx(4)).await.unwrap_err();
    assert_clean("key-8d2b-very-secret", &err.0);
    let slow = connector(&server.base, |c| {
        c.settings.timeout_ms = Some(100);
        c.auth = Some(AuthConfig::ApiKey {
            location: ApiKeyLocation::Query,
            name: "api_key".into(),
            value_env: "CODEMODE_TEST_APIKEY".into(),
        })
    })
    .await;
    let err = slow.execute("slow", json!({}), ctx(5)).await.unwrap_err();
    assert_clean("key-8d2b-very-secret", &err.0);

    // API key in a header.
    let c = connector(&server.base, |c| {
        c.auth = Some(AuthConfig::ApiKey {
            location: ApiKeyLocation::Header,
            name: "X-Api-Key".into(),
            value_env: "CODEMODE_TEST_APIKEY".into(),
        })
    })
    .await;
    let echo = c.execute("echo", json!({}), ctx(6)).await.unwrap();
    assert_eq!(echo["headers"]["x-api-key"], "[redacted]");

    // Basic: neither the password nor the encoded pair leaks.
    let c = connector(&server.base, |c| {
        c.auth = Some(AuthConfig::Basic {
            username_env: "CODEMODE_TEST_USER".into(),
            password_env: "CODEMODE_TEST_PASS".into(),
        })
    })
    .await;
    let echo = c.execute("echo", json!({}), ctx(7)).await.unwrap();
    assert_eq!(echo["headers"]["authorization"], "Basic [redacted]");
    assert_clean("pw-3c4d-very-secret", &echo.to_string());
}

#[tokio::test]
async fn idempotency_key_is_sent_when_configured() {
    let server = support::start().await;
    let c = connector(&server.base, |c| {
        c.idempotency_header = Some("Idempotency-Key".into());
        c.headers
            .insert("User-Agent".into(), "codemode-test".into());
    })
    .await;
    let echo = c.execute("echo", json!({}), ctx(4)).await.unwrap();
    assert_eq!(echo["headers"]["idempotency-key"], "exec-1:4");
    assert_eq!(echo["headers"]["user-agent"], "codemode-test");
}

#[tokio::test]
async fn spec_from_url_yaml_file_and_exposed_spec() {
    let server = support::start().await;
    let mut config = OpenApiConfig::new("items", format!("{}/spec.json", server.base));
    config.expose_spec = true;
    let c = OpenApiConnector::from_spec(config).await.unwrap();
    assert_eq!(c.operation_count(), 9);
    let spec = c.execute("spec", json!({}), ctx(0)).await.unwrap();
    assert_eq!(spec["info"]["title"], "Items");
    let t = c.tools().into_iter().find(|t| t.name == "spec").unwrap();
    assert!(t.read_only && !t.requires_approval);

    let dir = std::env::temp_dir().join(format!("codemode-openapi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = dir.join("items.yaml");
    let doc: Value = support::spec_for(&server.base);
    std::fs::write(&yaml, yaml_serde::to_string(&doc).unwrap()).unwrap();
    let c = OpenApiConnector::from_spec(OpenApiConfig::new("items", yaml.to_str().unwrap()))
        .await
        .unwrap();
    let list = c.execute("listItems", json!({}), ctx(0)).await.unwrap();
    assert_eq!(list, json!([]));
    assert!(
        !c.tools().iter().any(|t| t.name == "spec"),
        "spec only if configured"
    );
    std::fs::remove_dir_all(&dir).ok();
}
