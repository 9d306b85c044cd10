//! Bad documents and configurations: a clear error naming the connector and the cause.

use codemode_openapi::{AuthConfig, OpenApiConfig, OpenApiConnector};
use serde_json::json;

fn error_for(bytes: &[u8]) -> String {
    OpenApiConnector::from_bytes(OpenApiConfig::new("petstore", "inline"), bytes)
        .unwrap_err()
        .to_string()
}

fn doc_with(schemas: serde_json::Value) -> Vec<u8> {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {"/pets": {"post": {
            "operationId": "addPet",
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
            "responses": {"200": {"description": "ok"}}
        }}},
        "components": {"schemas": schemas}
    })
    .to_string()
    .into_bytes()
}

#[test]
fn not_json_or_yaml() {
    let err = error_for(b"{\"openapi\": \"3.0.0\",\n  paths: [unclosed");
    assert!(
        err.starts_with("OpenAPI connector `petstore`: spec is neither JSON"),
        "{err}"
    );
}

#[test]
fn not_openapi() {
    let err = error_for(b"{\"swagger\": \"2.0\", \"paths\": {}}");
    assert!(
        err.contains("`petstore`") && err.contains("Swagger 2.0"),
        "{err}"
    );
    let err = error_for(b"name: just yaml\n");
    assert!(err.contains("no `openapi` field"), "{err}");
}

#[test]
fn ref_loop() {
    let err = error_for(&doc_with(json!({
        "Pet": {"$ref": "#/components/schemas/Animal"},
        "Animal": {"$ref": "#/components/schemas/Pet"}
    })));
    assert!(err.contains("`petstore`"), "{err}");
    assert!(err.contains("POST /pets"), "{err}");
    assert!(err.contains("$ref loop: #/components/schemas/Pet -> #/components/schemas/Animal -> #/components/schemas/Pet"), "{err}");
}

#[test]
fn recursive_schemas_are_fine() {
    let c = OpenApiConnector::from_bytes(
        OpenApiConfig::new("petstore", "inline"),
        &doc_with(json!({"Pet": {"type": "object", "properties": {"parent": {"$ref": "#/components/schemas/Pet"}}}})),
    )
    .unwrap();
    assert_eq!(c.operation_count(), 1);
}

#[test]
fn dangling_ref() {
    let err = error_for(&doc_with(json!({})));
    assert!(
        err.contains("#/components/schemas/Pet") && err.contains("points at nothing"),
        "{err}"
    );
}

#[test]
fn missing_secret_variable() {
    let mut config = OpenApiConfig::new("petstore", "inline");
    config.auth = Some(AuthConfig::Bearer {
        token_env: "CODEMODE_TEST_NEVER_SET_TOKEN".into(),
    });
    let err = OpenApiConnector::from_bytes(config, &doc_with(json!({"Pet": {}})))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "OpenAPI connector `petstore`: environment variable CODEMODE_TEST_NEVER_SET_TOKEN (bearer token) is not set"
    );
}

#[test]
fn name_collisions_name_both_operations() {
    let doc = json!({
        "openapi": "3.0.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/a": {"get": {"operationId": "pets.list", "responses": {}}},
            "/b": {"get": {"operationId": "pets/list", "responses": {}}}
        }
    });
    let err = error_for(doc.to_string().as_bytes());
    assert!(
        err.contains("\"pets.list\"") && err.contains("\"pets/list\""),
        "{err}"
    );
    let doc = json!({
        "openapi": "3.0.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {"/a": {"post": {"operationId": "request", "responses": {}}}}
    });
    let err = error_for(doc.to_string().as_bytes());
    assert!(err.contains("built-in `request`"), "{err}");
}

#[test]
fn no_base_url() {
    let doc = json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}});
    let err = error_for(doc.to_string().as_bytes());
    assert!(err.contains("no base URL"), "{err}");
}

#[test]
fn bad_connector_name() {
    let err = OpenApiConnector::from_bytes(OpenApiConfig::new("my-api", "inline"), b"{}")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`my-api`") && err.contains("not a JavaScript identifier"),
        "{err}"
    );
}

#[tokio::test]
async fn missing_file_and_refused_url() {
    let err = OpenApiConnector::from_spec(OpenApiConfig::new("petstore", "/nonexistent/spec.yaml"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`petstore`") && err.contains("cannot read spec file /nonexistent/spec.yaml"),
        "{err}"
    );

    // A loopback port nobody listens on: bind one, then drop it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/openapi.json");
    let err = OpenApiConnector::from_spec(OpenApiConfig::new("petstore", url.clone()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`petstore`") && err.contains(&format!("cannot fetch spec {url}")),
        "{err}"
    );
    assert!(err.contains("connection failed"), "{err}");
}

#[test]
fn config_rejects_unknown_fields() {
    let err = yaml_serde::from_str::<OpenApiConfig>("name: a\nspec: b\ntimeout: 5\n").unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
    let auth: OpenApiConfig = yaml_serde::from_str(
        "name: a\nspec: b\nauth: {type: api_key, in: query, name: key, value_env: K}\n",
    )
    .unwrap();
    assert!(auth.auth.is_some());
    let err =
        yaml_serde::from_str::<OpenApiConfig>("name: a\nspec: b\nauth: {type: bearer, token: x}\n")
            .unwrap_err();
    assert!(err.to_string().contains("token"), "{err}");
}
