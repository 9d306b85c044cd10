//! The connector's HTTP client carries its own TLS settings: calling an `https://` API, in a
//! process where no rustls provider is installed, tries a real handshake, fails with an
//! error the code can read (not a panic) and leaves the process-wide provider unset. (Its own
//! test binary: no other test may install a provider in this process.)

use codemode::{CallContext, Connector};
use codemode_openapi::{OpenApiConfig, OpenApiConnector};
use codemode_testkit::tls::{process_provider_installed, PlainTextServer};
use serde_json::json;

#[tokio::test]
async fn an_https_api_is_called_without_a_process_wide_provider() {
    assert!(!process_provider_installed());
    let server = PlainTextServer::start().await.unwrap();
    let spec = json!({
        "openapi": "3.0.3",
        "info": {"title": "Items", "version": "1"},
        "servers": [{"url": server.https_url()}],
        "paths": {"/items": {"get": {"operationId": "listItems",
            "responses": {"200": {"description": "ok"}}}}}
    });
    let connector = OpenApiConnector::from_bytes(
        OpenApiConfig::new("items", "inline"),
        spec.to_string().as_bytes(),
    )
    .unwrap();
    let ctx = CallContext {
        execution_id: "exec-1".into(),
        seq: 0,
    };
    let err = connector
        .execute("listItems", json!({}), ctx)
        .await
        .unwrap_err();
    assert!(err.0.contains("GET /items"), "{err:?}");
    assert!(
        server.saw_handshake(),
        "no TLS handshake reached the server: {err:?}"
    );
    assert!(
        !process_provider_installed(),
        "the connector installed a process-wide provider"
    );
}
