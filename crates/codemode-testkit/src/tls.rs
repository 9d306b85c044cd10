//! What the `no_process_provider` tests share: a loopback server that answers TLS in plain
//! text, and whether a process-wide rustls provider is installed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback server that answers every connection with a plain-text HTTP 400: a client's TLS
/// handshake fails there, after reaching it.
pub struct PlainTextServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    hello: Arc<AtomicBool>,
}

impl PlainTextServer {
    /// Starts one on a free port (call inside a tokio runtime).
    pub async fn start() -> std::io::Result<PlainTextServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let hello = Arc::new(AtomicBool::new(false));
        let seen = hello.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut first = [0u8; 1];
                    // A TLS record of a handshake starts with the byte 0x16.
                    if socket.read_exact(&mut first).await.is_ok() && first[0] == 0x16 {
                        seen.store(true, Ordering::SeqCst);
                    }
                    let _ = socket
                        .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                        .await;
                });
            }
        });
        Ok(PlainTextServer { port, hello })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn https_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// Whether a TLS handshake reached it.
    pub fn saw_handshake(&self) -> bool {
        self.hello.load(Ordering::SeqCst)
    }
}

/// Whether a process-wide rustls crypto provider is installed.
pub fn process_provider_installed() -> bool {
    rustls::crypto::CryptoProvider::get_default().is_some()
}
