//! The connector's HTTP client carries its own TLS settings: connecting to an `https://`
//! server, in a process where no rustls provider is installed, tries a real handshake, fails
//! with an error (not a panic) and leaves the process-wide provider unset. (Its own test
//! binary: no other test may install a provider in this process.)

use codemode_mcp::{McpConfig, McpConnector, McpTransport};
use rustls::crypto::CryptoProvider;
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
async fn an_https_server_is_tried_without_a_process_wide_provider() {
    assert!(CryptoProvider::get_default().is_none());
    let (port, hello) = plain_text_server().await;
    let mut config = McpConfig::new(
        "remote",
        McpTransport::http(format!("https://127.0.0.1:{port}/mcp")),
    );
    config.startup_timeout_ms = 5_000;
    let err = McpConnector::connect(config).await.unwrap_err().to_string();
    assert!(err.contains("`remote`"), "{err}");
    assert!(
        hello.load(Ordering::SeqCst),
        "no TLS handshake reached the server: {err}"
    );
    assert!(
        CryptoProvider::get_default().is_none(),
        "the connector installed a process-wide provider"
    );
}
