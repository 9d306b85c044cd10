//! The connector's HTTP client carries its own TLS settings: calling an `https://` API, in a
//! process where no rustls provider is installed, tries a real handshake, fails with an
//! error the code can read (not a panic) and leaves the process-wide provider unset. (Its own
//! test binary: no other test may install a provider in this process.)

use codemode::{CallContext, Connector};
use codemode_openapi::{OpenApiConfig, OpenApiConnector};
use rustls::crypto::CryptoProvider;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback server that answers TLS with plain text: a client's handshake fails there. Its
/// port, and whether a TLS handshake (a record starting with byte 0x16) reached it.
async fn plain_text_server() -> (u16, Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hello = Arc::new(AtomicBool::new(false));
    let seen = hello.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut first = [0u8; 1];
                if socket.read_exact(&mut first).await.is_ok() && first[0] == 0x16 {
                    seen.store(true, Ordering::SeqCst);
                }
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (port, hello)
}

#[tokio::test]
async fn an_https_api_is_called_without_a_process_wide_provider() {
    assert!(CryptoProvider::get_default().is_none());
    let (port, hello) = plain_text_server().await;
    let spec = json!({
        "openapi": "3.0.3",
        "info": {"title": "Items", "version": "1"},
        "servers": [{"url": format!("https://127.0.0.1:{port}")}],
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
        hello.load(Ordering::SeqCst),
        "no TLS handshake reached the server: {err:?}"
    );
    assert!(
        CryptoProvider::get_default().is_none(),
        "the connector installed a process-wide provider"
    );
}
