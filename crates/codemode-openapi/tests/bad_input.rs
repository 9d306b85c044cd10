//! Bad documents and configurations: a clear error naming the connector and the cause.

use codemode::Connector;
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
        "paths": {"/pets": {
          "get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}},
          "post": {
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

fn warnings_for(bytes: &[u8]) -> (OpenApiConnector, Vec<String>) {
    let c = OpenApiConnector::from_bytes(OpenApiConfig::new("petstore", "inline"), bytes).unwrap();
    let warnings = c.warnings();
    (c, warnings)
}

#[test]
fn ref_loop_leaves_the_operation_out() {
    let (c, warnings) = warnings_for(&doc_with(json!({
        "Pet": {"$ref": "#/components/schemas/Animal"},
        "Animal": {"$ref": "#/components/schemas/Pet"}
    })));
    assert_eq!(c.operation_count(), 1, "listPets still loads");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.starts_with(
            "OpenAPI connector `petstore`: operation \"addPet\" (POST /pets) is left out"
        ),
        "{w}"
    );
    assert!(w.contains("$ref loop: #/components/schemas/Pet -> #/components/schemas/Animal -> #/components/schemas/Pet"), "{w}");
}

#[test]
fn recursive_schemas_are_fine() {
    let c = OpenApiConnector::from_bytes(
        OpenApiConfig::new("petstore", "inline"),
        &doc_with(json!({"Pet": {"type": "object", "properties": {"parent": {"$ref": "#/components/schemas/Pet"}}}})),
    )
    .unwrap();
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    assert_eq!(c.operation_count(), 2);
}

#[test]
fn dangling_ref_leaves_the_operation_out() {
    let (c, warnings) = warnings_for(&doc_with(json!({})));
    assert_eq!(c.operation_count(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("#/components/schemas/Pet")
            && warnings[0].contains("points at nothing"),
        "{warnings:?}"
    );
}

#[test]
fn a_schema_that_does_not_compile_leaves_the_operation_out() {
    let (c, warnings) = warnings_for(&doc_with(json!({"Pet": {"type": "no-such-type"}})));
    assert_eq!(c.operation_count(), 1);
    let names: Vec<String> = c.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["listPets", "request"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("\"addPet\" (POST /pets) is left out")
            && warnings[0].contains("not valid JSON Schema"),
        "{warnings:?}"
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
fn colliding_and_reserved_names_are_renamed_with_a_warning() {
    let doc = json!({
        "openapi": "3.0.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/a": {"get": {"operationId": "pets.list", "responses": {}}},
            "/b": {"get": {"operationId": "pets/list", "responses": {}}},
            "/c": {"get": {"operationId": "pets.list", "responses": {}}},
            "/d": {"post": {"operationId": "request", "responses": {}}}
        }
    });
    let (c, warnings) = warnings_for(doc.to_string().as_bytes());
    let names: Vec<String> = c.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "pets_list",
            "pets_list_2",
            "pets_list_3",
            "request_2",
            "request"
        ]
    );
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].contains("\"pets/list\" (GET /b)")
            && warnings[0].contains("like operation \"pets.list\"")
            && warnings[0].contains("`pets_list_2`"),
        "{warnings:?}"
    );
    assert!(
        warnings[2].contains("built-in `request`") && warnings[2].contains("`request_2`"),
        "{warnings:?}"
    );
    // The renamed operation is the one its name says.
    let tools = c.tools();
    let renamed = tools.iter().find(|t| t.name == "request_2").unwrap();
    assert!(renamed.description.as_deref().unwrap().contains("POST /d"));
    assert!(renamed.requires_approval);
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

#[test]
fn in_a_large_document_only_the_bad_operations_are_left_out() {
    // Enough operations that their schemas are checked on several threads: order is kept.
    let mut paths = serde_json::Map::new();
    for i in 0..150 {
        let ty = if i % 50 == 7 {
            "no-such-type"
        } else {
            "string"
        };
        paths.insert(
            format!("/items{i}"),
            json!({"get": {"operationId": format!("get{i}"),
                "parameters": [{"name": "q", "in": "query", "schema": {"type": ty}}],
                "responses": {}}}),
        );
    }
    let doc = json!({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}], "paths": paths
    });
    let (c, warnings) = warnings_for(doc.to_string().as_bytes());
    assert_eq!(c.operation_count(), 147);
    let left_out: Vec<&str> = warnings
        .iter()
        .map(|w| w.split('"').nth(1).unwrap())
        .collect();
    assert_eq!(left_out, ["get7", "get57", "get107"], "{warnings:?}");
    let names: Vec<String> = c.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names[..8],
        ["get0", "get1", "get2", "get3", "get4", "get5", "get6", "get8"]
    );
}
