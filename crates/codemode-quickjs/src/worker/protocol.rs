//! The frames between a [`super::ProcessExecutor`] and its sandbox processes: each is a
//! 4-byte little-endian length and that many bytes of JSON.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read, Write};

use codemode::executor::PositionalParams;
use codemode::{ExecuteResult, HostReply, Namespace, PassEnd};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest frame a sandbox process reads from its parent (the parent is trusted).
pub(crate) const MAX_PARENT_FRAME: usize = 1 << 30;

/// The limits a sandbox process applies to every pass, sent once when it starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Limits {
    pub wall_time_ms: u64,
    pub memory_limit: usize,
    pub max_stack_size: usize,
    pub max_console_bytes: usize,
    pub max_code_bytes: usize,
}

/// A namespace as sent to a sandbox process.
#[derive(Debug, Clone, Serialize, Deserialize, Hash)]
pub(crate) struct WireNamespace {
    pub name: String,
    pub methods: Vec<String>,
    /// Per method: `(names, required)`, when the connector takes positional arguments.
    pub positional: Vec<Option<(Vec<String>, usize)>>,
    /// Why the connector is unavailable (it failed to start), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl WireNamespace {
    pub(crate) fn from_namespace(ns: &Namespace) -> Self {
        WireNamespace {
            name: ns.name.clone(),
            methods: ns.methods.clone(),
            positional: ns
                .positional
                .iter()
                .map(|p| p.as_ref().map(|p| (p.names.clone(), p.required)))
                .collect(),
            unavailable: ns.unavailable.clone(),
        }
    }

    pub(crate) fn into_namespace(self) -> Namespace {
        Namespace {
            name: self.name,
            methods: self.methods,
            positional: self
                .positional
                .into_iter()
                .map(|p| p.map(|(names, required)| PositionalParams { names, required }))
                .collect(),
            unavailable: self.unavailable,
        }
    }
}

/// A fingerprint of a pass's namespaces: a process is sent them again only when it changes.
pub(crate) fn fingerprint(namespaces: &[WireNamespace]) -> u64 {
    let mut hasher = DefaultHasher::new();
    namespaces.hash(&mut hasher);
    hasher.finish()
}

/// A host's reply, as sent to a sandbox process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum WireReply {
    Value(Value),
    Throw(String),
    Abort,
    RunCode { code: String, input: Value },
}

impl From<HostReply> for WireReply {
    fn from(reply: HostReply) -> Self {
        match reply {
            HostReply::Value(v) => WireReply::Value(v),
            HostReply::Throw(m) => WireReply::Throw(m),
            HostReply::Abort => WireReply::Abort,
            HostReply::RunCode { code, input } => WireReply::RunCode { code, input },
        }
    }
}

impl From<WireReply> for HostReply {
    fn from(reply: WireReply) -> Self {
        match reply {
            WireReply::Value(v) => HostReply::Value(v),
            WireReply::Throw(m) => HostReply::Throw(m),
            WireReply::Abort => HostReply::Abort,
            WireReply::RunCode { code, input } => HostReply::RunCode { code, input },
        }
    }
}

/// How a pass ended, as a sandbox process reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum WireEnd {
    Returned(Value),
    Failed(String),
    Aborted,
}

impl From<PassEnd> for WireEnd {
    fn from(end: PassEnd) -> Self {
        match end {
            PassEnd::Returned(v) => WireEnd::Returned(v),
            PassEnd::Failed(m) => WireEnd::Failed(m),
            PassEnd::Aborted => WireEnd::Aborted,
        }
    }
}

impl WireEnd {
    /// The result, with the console lines the parent gathered from the pass's frames.
    pub(crate) fn into_result(self, logs: Vec<String>) -> ExecuteResult {
        let end = match self {
            WireEnd::Returned(v) => PassEnd::Returned(v),
            WireEnd::Failed(m) => PassEnd::Failed(m),
            WireEnd::Aborted => PassEnd::Aborted,
        };
        ExecuteResult { end, logs }
    }
}

/// A frame from the parent to a sandbox process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ToChild {
    /// The first frame: the limits of every pass.
    Init(Limits),
    /// Run this code; `namespaces` is `None` when they are those of the process's last pass.
    Pass {
        code: String,
        namespaces: Option<Vec<WireNamespace>>,
    },
    /// The host's answer to call `id`.
    Reply { id: u64, reply: WireReply },
    /// Stop the pass at its next instruction boundary.
    Cancel,
    /// Try to open a socket, a file and a process, and report each `errno` (a test of the
    /// confinement; the server runs it once at start).
    Probe,
}

/// A frame from a sandbox process to its parent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum FromChild {
    /// Confined and ready for passes.
    Ready {
        /// Address space the process held before its limit was set, in bytes.
        baseline_vsz: u64,
        /// The address-space limit in force, in bytes.
        address_limit: u64,
    },
    /// The process could not confine itself, and exits.
    Refused(String),
    /// The code called `namespace.method(args)`.
    Call {
        id: u64,
        namespace: String,
        method: String,
        args: Value,
    },
    /// The sandbox ran out of jobs with call `id` waiting: the host may start on it now. A
    /// call's future is first polled then in-process too, so the host has seen every call of
    /// a burst (a `Promise.all`) before it answers any of them.
    Polled { id: u64 },
    /// The code wrote a console line.
    Console(String),
    /// The pass ended; `spent`: the process should not run another (it exits).
    Done { end: WireEnd, spent: bool },
    /// The `errno` of each probe (0 if the call succeeded).
    Probed { socket: i32, open: i32, fork: i32 },
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The stream failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A frame longer than the reader accepts.
    #[error("a message of {len} bytes, more than the {max} accepted")]
    TooLarge { len: usize, max: usize },
    /// A frame that is not a message of the protocol.
    #[error("a message that is not part of the protocol ({0})")]
    Garbage(String),
}

/// Encodes one frame: length, then JSON.
pub(crate) fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let mut bytes = vec![0u8; 4];
    // Serialising these types cannot fail (string keys, no non-finite floats in a `Value`).
    if serde_json::to_writer(&mut bytes, message).is_err() {
        bytes.truncate(4);
        bytes.extend_from_slice(b"null");
    }
    let len = (bytes.len() - 4) as u32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    bytes
}

/// Decodes one frame's body.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Garbage(e.to_string()))
}

/// Writes one frame to a blocking stream.
pub(crate) fn write_frame<T: Serialize>(out: &mut impl Write, message: &T) -> io::Result<()> {
    out.write_all(&encode(message))?;
    out.flush()
}

/// Reads one frame from a blocking stream; `None` at the end of the stream.
pub(crate) fn read_frame<T: for<'de> Deserialize<'de>>(
    input: &mut impl Read,
    max: usize,
) -> Result<Option<T>, FrameError> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    decode(&body).map(Some)
}

/// Reads frames from an async stream, keeping partial frames between calls, so that
/// [`FrameReader::next`] may be dropped (in a `select!`) without losing bytes.
pub(crate) struct FrameReader<R> {
    stream: R,
    buffer: Vec<u8>,
    max: usize,
}

impl<R: tokio::io::AsyncRead + Unpin> FrameReader<R> {
    /// A reader refusing frames longer than `max` bytes.
    pub(crate) fn new(stream: R, max: usize) -> Self {
        FrameReader {
            stream,
            buffer: Vec::with_capacity(64 * 1024),
            max,
        }
    }

    /// The next frame; `None` at the end of the stream. Cancel-safe.
    pub(crate) async fn next<T: for<'de> Deserialize<'de>>(
        &mut self,
    ) -> Result<Option<T>, FrameError> {
        use tokio::io::AsyncReadExt;
        loop {
            if self.buffer.len() >= 4 {
                let mut len = [0u8; 4];
                len.copy_from_slice(&self.buffer[..4]);
                let len = u32::from_le_bytes(len) as usize;
                if len > self.max {
                    return Err(FrameError::TooLarge { len, max: self.max });
                }
                if self.buffer.len() >= 4 + len {
                    let decoded = decode(&self.buffer[4..4 + len]);
                    self.buffer.drain(..4 + len);
                    return decoded.map(Some);
                }
                self.buffer.reserve(4 + len - self.buffer.len());
            }
            if self.buffer.capacity() - self.buffer.len() < 16 * 1024 {
                self.buffer.reserve(64 * 1024);
            }
            let read = self.stream.read_buf(&mut self.buffer).await?;
            if read == 0 {
                if self.buffer.is_empty() {
                    return Ok(None);
                }
                return Err(FrameError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a message",
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let call = FromChild::Call {
            id: 7,
            namespace: "tasks".into(),
            method: "get".into(),
            args: serde_json::json!({"id": 1, "big": 1.5e300}),
        };
        let bytes = encode(&call);
        let back: FromChild = read_frame(&mut &bytes[..], 1 << 20).unwrap().unwrap();
        assert_eq!(encode(&back), bytes);
        let refused = read_frame::<FromChild>(&mut &bytes[..], 4);
        assert!(matches!(refused, Err(FrameError::TooLarge { .. })));
        let garbage = [3u8, 0, 0, 0, b'x', b'y', b'z'];
        let garbage = read_frame::<FromChild>(&mut &garbage[..], 100);
        assert!(matches!(garbage, Err(FrameError::Garbage(_))));
    }
}
