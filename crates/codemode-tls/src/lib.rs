//! The TLS settings of every HTTP client codemode's libraries make (the MCP connector's, the
//! OpenAPI connector's, the server's control API client and OTLP exporter): rustls on ring
//! with the platform's roots, given to each client alone. No library installs a process-wide
//! crypto provider: that choice is the host's.
//!
//! A crate of its own because the three crates that make clients share no other dependency
//! than the core `codemode`, which names no protocol and no TLS library.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// The README's Rust blocks, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use rustls::Error as TlsError;

/// A builder of an HTTP client whose TLS is rustls on ring with the platform's roots (HTTP/1.1
/// over TLS), chosen for this client alone; fails only if the platform's roots cannot be read.
pub fn http_client_builder() -> Result<reqwest::ClientBuilder, TlsError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_platform_verifier()?
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls))
}

#[cfg(test)]
mod tests {
    /// A client is built without a process-wide provider, and installs none.
    #[test]
    fn a_client_needs_no_process_wide_provider() {
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        let client = super::http_client_builder().and_then(|b| {
            b.build()
                .map_err(|e| super::TlsError::General(e.to_string()))
        });
        assert!(client.is_ok(), "{:?}", client.err());
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    }
}
