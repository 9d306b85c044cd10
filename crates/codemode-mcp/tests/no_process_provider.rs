//! The connector's HTTP client carries its own TLS settings: connecting to an `https://`
//! server, in a process where no rustls provider is installed, tries a real handshake, fails
//! with an error (not a panic) and leaves the process-wide provider unset. (Its own test
//! binary: no other test may install a provider in this process.)

use codemode_mcp::{McpConfig, McpConnector, McpTransport};
use codemode_testkit::tls::{process_provider_installed, PlainTextServer};

#[tokio::test]
async fn an_https_server_is_tried_without_a_process_wide_provider() {
    assert!(!process_provider_installed());
    let server = PlainTextServer::start().await.unwrap();
    let mut config = McpConfig::new(
        "remote",
        McpTransport::http(format!("{}/mcp", server.https_url())),
    );
    config.startup_timeout_ms = 5_000;
    let err = McpConnector::connect(config).await.unwrap_err().to_string();
    assert!(err.contains("`remote`"), "{err}");
    assert!(
        server.saw_handshake(),
        "no TLS handshake reached the server: {err}"
    );
    assert!(
        !process_provider_installed(),
        "the connector installed a process-wide provider"
    );
}
