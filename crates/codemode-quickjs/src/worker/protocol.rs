//! The frames between a [`super::ProcessExecutor`] and its sandbox processes: each is a
//! 4-byte little-endian length and that many bytes of JSON.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;

use codemode::executor::PositionalParams;
use codemode::{ClockRun, ExecuteResult, HostReply, Namespace, PassEnd};
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
        /// The clock readings to replay, and `Math.random`'s seed.
        #[serde(default)]
        clock: Vec<ClockRun>,
        #[serde(default)]
        random_seed: Option<u64>,
    },
    /// The host's answer to call `id`. (A cancel is a signal, not a frame: see `sys.rs`.)
    Reply { id: u64, reply: WireReply },
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
    /// Clock readings the code took past the replayed ones (sent before the next call).
    Clock(Vec<ClockRun>),
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

/// Appends one frame to `out`: length, then JSON.
pub(crate) fn encode_into<T: Serialize>(out: &mut Vec<u8>, message: &T) {
    let at = out.len();
    out.extend_from_slice(&[0u8; 4]);
    // Serialising these types cannot fail (string keys, no non-finite floats in a `Value`).
    if serde_json::to_writer(&mut *out, message).is_err() {
        out.truncate(at + 4);
        out.extend_from_slice(b"null");
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Encodes one frame: length, then JSON.
pub(crate) fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_into(&mut bytes, message);
    bytes
}

/// Decodes one frame's body.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Garbage(e.to_string()))
}

/// Bytes read from a stream, cut into frames: a partial frame stays until the rest arrives,
/// and the buffer is reused from frame to frame.
pub(crate) struct FrameBuffer {
    bytes: Vec<u8>,
    /// The first byte not yet taken.
    start: usize,
    /// The end of the bytes read.
    end: usize,
    max: usize,
}

impl FrameBuffer {
    /// A buffer refusing frames longer than `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        FrameBuffer {
            bytes: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            max,
        }
    }

    /// Whether no byte is waiting (no partial frame).
    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The next whole frame in the buffer, if there is one.
    pub(crate) fn take<T: for<'de> Deserialize<'de>>(&mut self) -> Result<Option<T>, FrameError> {
        let waiting = &self.bytes[self.start..self.end];
        let Some(len) = waiting.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > self.max {
            return Err(FrameError::TooLarge { len, max: self.max });
        }
        if waiting.len() < 4 + len {
            return Ok(None);
        }
        let decoded = decode(&waiting[4..4 + len]);
        self.start += 4 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        decoded.map(Some)
    }

    /// Room to read into, enough for the partial frame waiting (call [`Self::filled`] after).
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        let waiting = self.end - self.start;
        let needed = match self.bytes[self.start..self.end].first_chunk::<4>() {
            Some(len) => (4 + u32::from_le_bytes(*len) as usize).min(4 + self.max),
            None => 4,
        };
        if self.start > 0 && self.start + needed.max(16 * 1024) > self.bytes.len() {
            self.bytes.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = waiting;
        }
        let wanted = self.start + needed.max(waiting + 16 * 1024);
        if wanted > self.bytes.len() {
            self.bytes.resize(wanted, 0);
        }
        &mut self.bytes[self.end..]
    }

    /// `n` bytes were read into [`Self::spare`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.bytes.len());
    }

    /// The error for a stream that ended inside a frame.
    fn cut_short() -> FrameError {
        FrameError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the stream ended inside a message",
        ))
    }
}

/// Reads frames from an async stream; [`FrameReader::next`] may be dropped (in a `select!`)
/// without losing bytes.
pub(crate) struct FrameReader<R> {
    stream: R,
    frames: FrameBuffer,
}

impl<R: tokio::io::AsyncRead + Unpin> FrameReader<R> {
    /// A reader refusing frames longer than `max` bytes.
    pub(crate) fn new(stream: R, max: usize) -> Self {
        FrameReader {
            stream,
            frames: FrameBuffer::new(max),
        }
    }

    /// The next frame; `None` at the end of the stream. Cancel-safe.
    pub(crate) async fn next<T: for<'de> Deserialize<'de>>(
        &mut self,
    ) -> Result<Option<T>, FrameError> {
        use tokio::io::AsyncReadExt;
        loop {
            if let Some(frame) = self.frames.take()? {
                return Ok(Some(frame));
            }
            let read = self.stream.read(self.frames.spare()).await?;
            if read == 0 {
                if self.frames.is_empty() {
                    return Ok(None);
                }
                return Err(FrameBuffer::cut_short());
            }
            self.frames.filled(read);
        }
    }
}

/// What a blocking read of the next frame found.
pub(crate) enum Next<T> {
    /// A whole frame.
    Frame(T),
    /// A signal interrupted the wait.
    Interrupted,
    /// The stream ended (between frames).
    End,
}

/// Reads the next frame with `read` (one `read(2)`: returns the bytes read, or an error of
/// kind `Interrupted` when a signal came first).
pub(crate) fn next_blocking<T: for<'de> Deserialize<'de>>(
    frames: &mut FrameBuffer,
    mut read: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> Result<Next<T>, FrameError> {
    loop {
        if let Some(frame) = frames.take()? {
            return Ok(Next::Frame(frame));
        }
        match read(frames.spare()) {
            Ok(0) if frames.is_empty() => return Ok(Next::End),
            Ok(0) => return Err(FrameBuffer::cut_short()),
            Ok(n) => frames.filled(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(Next::Interrupted),
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_one<T: for<'de> Deserialize<'de>>(
        bytes: &[u8],
        max: usize,
        chunk: usize,
    ) -> Result<Next<T>, FrameError> {
        let mut frames = FrameBuffer::new(max);
        let mut rest = bytes;
        next_blocking(&mut frames, |spare| {
            let n = rest.len().min(spare.len()).min(chunk);
            spare[..n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            Ok(n)
        })
    }

    #[test]
    fn frames_round_trip() {
        let call = FromChild::Call {
            id: 7,
            namespace: "tasks".into(),
            method: "get".into(),
            args: serde_json::json!({"id": 1, "big": 1.5e300}),
        };
        let bytes = encode(&call);
        for chunk in [1, 3, 1 << 20] {
            let Ok(Next::Frame(back)) = read_one::<FromChild>(&bytes, 1 << 20, chunk) else {
                panic!("no frame");
            };
            assert_eq!(encode(&back), bytes);
        }
        let refused = read_one::<FromChild>(&bytes, 4, 1 << 20);
        assert!(matches!(refused, Err(FrameError::TooLarge { .. })));
        let garbage = [3u8, 0, 0, 0, b'x', b'y', b'z'];
        let garbage = read_one::<FromChild>(&garbage, 100, 1 << 20);
        assert!(matches!(garbage, Err(FrameError::Garbage(_))));
        let cut = read_one::<FromChild>(&bytes[..bytes.len() - 1], 1 << 20, 1 << 20);
        assert!(matches!(cut, Err(FrameError::Io(_))));
        assert!(matches!(
            read_one::<FromChild>(&[], 100, 100),
            Ok(Next::End)
        ));
    }

    #[test]
    fn a_buffer_holds_frames_larger_than_itself_and_several_at_once() {
        let big = ToChild::Reply {
            id: 1,
            reply: WireReply::Value(Value::String("x".repeat(200_000))),
        };
        let mut bytes = encode(&ToChild::Probe);
        encode_into(&mut bytes, &big);
        encode_into(&mut bytes, &ToChild::Probe);
        let mut frames = FrameBuffer::new(1 << 20);
        let mut rest = &bytes[..];
        let mut seen = Vec::new();
        loop {
            let next = next_blocking::<ToChild>(&mut frames, |spare| {
                let n = rest.len().min(spare.len()).min(7_000);
                spare[..n].copy_from_slice(&rest[..n]);
                rest = &rest[n..];
                Ok(n)
            });
            match next {
                Ok(Next::Frame(frame)) => seen.push(encode(&frame)),
                Ok(Next::End) => break,
                _ => panic!("not a frame"),
            }
        }
        assert_eq!(seen.concat(), bytes);
    }
}
