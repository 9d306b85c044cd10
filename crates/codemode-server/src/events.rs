//! The event stream: every runtime event of this node, numbered in the order it happened, the
//! newest [`EVENT_HISTORY`] kept for reconnects, served as server-sent events at
//! `GET /api/events` (status changes and new pending actions of every execution) and
//! `GET /api/executions/{id}/events` (everything about one execution: its calls as they start
//! and end, its console lines, its status).
//!
//! A client that reconnects with `Last-Event-ID` gets what it missed from the history; one
//! that missed more than the history holds gets a `reset` event (reload, then follow). A new
//! client of an execution's stream first gets its current pass so far (from its newest
//! `running` status still kept), so a page opened mid-pass shows the calls already made. A
//! client that stops reading falls behind the bounded channel and is dropped, so it never
//! holds more than the channel's capacity; it reconnects with its last id.

use axum::response::sse::Event;
use codemode::{ExecutionStatus, Runtime, RuntimeEvent};
use futures::stream::{self, Stream, StreamExt};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// How many of the newest events are kept for clients that reconnect.
pub const EVENT_HISTORY: usize = 4096;

/// How many events a client may fall behind before it is dropped.
pub const CLIENT_BUFFER: usize = 1024;

/// Default event streams open at once (`limits.max_event_streams`).
pub const DEFAULT_MAX_STREAMS: usize = 128;
/// Default event streams open at once for one client: one token, or one address when no
/// token is needed (`limits.max_event_streams_per_client`).
pub const DEFAULT_MAX_STREAMS_PER_CLIENT: usize = 16;
/// Seconds a refused stream's client is told to wait.
pub const STREAM_RETRY_AFTER_SECONDS: u64 = 5;

/// How many event streams may be open: in all, and for one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Streams open at once, every client together.
    pub max_streams: usize,
    /// Streams open at once for one client.
    pub max_per_client: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_streams: DEFAULT_MAX_STREAMS,
            max_per_client: DEFAULT_MAX_STREAMS_PER_CLIENT,
        }
    }
}

/// Why a stream was not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamRefused {
    /// Every client together has `limits.max_event_streams` open (answered 503).
    Full(usize),
    /// This client has `limits.max_event_streams_per_client` open (answered 429).
    ClientFull(usize),
}

impl std::fmt::Display for StreamRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamRefused::Full(n) => write!(f, "the server has {n} event streams open, its limit (limits.max_event_streams); close one or try again in {STREAM_RETRY_AFTER_SECONDS} s"),
            StreamRefused::ClientFull(n) => write!(f, "this client has {n} event streams open, its limit (limits.max_event_streams_per_client); close one (one stream carries every execution's events) or try again in {STREAM_RETRY_AFTER_SECONDS} s"),
        }
    }
}

/// One numbered event.
type Numbered = (u64, Arc<RuntimeEvent>);

/// This node's events, numbered, with the newest kept.
pub struct EventLog {
    history: Mutex<History>,
    live: broadcast::Sender<Numbered>,
    clients: AtomicUsize,
    limits: StreamLimits,
    /// Open streams by client.
    by_client: Mutex<HashMap<String, usize>>,
}

#[derive(Default)]
struct History {
    /// The id the next event gets (ids start at 1).
    next: u64,
    kept: VecDeque<Numbered>,
}

/// Which events a stream carries.
#[derive(Clone)]
pub enum Filter {
    /// Status changes and new pending actions of every execution.
    Executions,
    /// Everything about one execution.
    Execution(String),
}

impl Filter {
    fn wants(&self, event: &RuntimeEvent) -> bool {
        match self {
            Filter::Executions => matches!(
                event,
                RuntimeEvent::StatusChanged { .. } | RuntimeEvent::PendingCreated { .. }
            ),
            Filter::Execution(id) => event.execution_id() == id,
        }
    }
}

impl EventLog {
    /// An event log fed by every event of `runtime` from now on, with the default limits.
    pub fn start(runtime: &Runtime) -> Arc<EventLog> {
        EventLog::start_with(runtime, StreamLimits::default())
    }

    /// An event log fed by every event of `runtime` from now on, its streams within `limits`.
    pub fn start_with(runtime: &Runtime, limits: StreamLimits) -> Arc<EventLog> {
        let log = Arc::new(EventLog {
            history: Mutex::new(History {
                next: 1,
                kept: VecDeque::new(),
            }),
            live: broadcast::channel(CLIENT_BUFFER).0,
            clients: AtomicUsize::new(0),
            limits,
            by_client: Mutex::new(HashMap::new()),
        });
        let feed = Arc::downgrade(&log);
        runtime.observe(move |event| {
            if let Some(log) = feed.upgrade() {
                log.record(event);
            }
        });
        log
    }

    fn lock(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Numbers and keeps one event, and hands it to the streams (under the lock, so every
    /// stream sees ids in order).
    fn record(&self, event: &Arc<RuntimeEvent>) {
        let mut h = self.lock();
        let numbered = (h.next, event.clone());
        h.next += 1;
        if h.kept.len() == EVENT_HISTORY {
            h.kept.pop_front();
        }
        h.kept.push_back(numbered.clone());
        if self.live.receiver_count() > 0 {
            let _ = self.live.send(numbered);
        }
    }

    /// The number of streams open now.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// The id of the newest event (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.lock().next - 1
    }

    /// The events after `after` still kept (or `None` if some were already dropped), and a
    /// receiver of every later one.
    fn follow(&self, after: u64) -> (Option<Vec<Numbered>>, broadcast::Receiver<Numbered>) {
        let h = self.lock();
        let live = self.live.subscribe();
        let oldest = h.kept.front().map_or(h.next, |(id, _)| *id);
        let missed = if after + 1 < oldest {
            None
        } else {
            Some(
                h.kept
                    .iter()
                    .filter(|(id, _)| *id > after)
                    .cloned()
                    .collect(),
            )
        };
        (missed, live)
    }

    /// Where a new client of `filter` starts: an execution's stream with the current pass so
    /// far (from its newest `running` status still kept), the others from now on.
    fn start_of(&self, filter: &Filter) -> u64 {
        let h = self.lock();
        let now = h.next - 1;
        let Filter::Execution(id) = filter else {
            return now;
        };
        h.kept
            .iter()
            .rev()
            .find(|(_, e)| {
                matches!(&**e, RuntimeEvent::StatusChanged { execution_id, status: ExecutionStatus::Running, .. } if execution_id == id)
            })
            .map_or(now, |(at, _)| at - 1)
    }

    /// A place for one more stream of `client`, within the limits.
    pub fn open(self: &Arc<Self>, client: &str) -> Result<StreamPlace, StreamRefused> {
        let mut by_client = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        if self.clients.load(Ordering::SeqCst) >= self.limits.max_streams {
            return Err(StreamRefused::Full(self.limits.max_streams));
        }
        let mine = by_client.entry(client.to_string()).or_insert(0);
        if *mine >= self.limits.max_per_client {
            return Err(StreamRefused::ClientFull(self.limits.max_per_client));
        }
        *mine += 1;
        self.clients.fetch_add(1, Ordering::SeqCst);
        Ok(StreamPlace {
            log: self.clone(),
            client: client.to_string(),
        })
    }

    /// The stream of events `filter` wants after `after` (`None`: see `start_of`),
    /// holding `place` while it is open.
    pub fn stream(
        self: &Arc<Self>,
        filter: Filter,
        after: Option<u64>,
        place: StreamPlace,
    ) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
        let after = after.unwrap_or_else(|| self.start_of(&filter));
        let (missed, live) = self.follow(after);
        let client = place;
        let first = match missed {
            Some(events) => events
                .into_iter()
                .filter(|(_, e)| filter.wants(e))
                .map(|(id, e)| sse(id, &e))
                .collect(),
            None => vec![reset(after)],
        };
        let ready = Event::default().comment("ready");
        let live = stream::unfold(
            (live, filter, client),
            |(mut live, filter, client)| async move {
                loop {
                    match live.recv().await {
                        Ok((id, event)) if filter.wants(&event) => {
                            return Some((sse(id, &event), (live, filter, client)))
                        }
                        Ok(_) => continue,
                        // Fell behind (it stopped reading) or the server is going away: end
                        // the stream; the client reconnects with its last id.
                        Err(_) => return None,
                    }
                }
            },
        );
        stream::iter(std::iter::once(ready).chain(first))
            .chain(live)
            .map(Ok)
    }
}

/// An open stream's place, counted in all and for its client for as long as it lives.
pub struct StreamPlace {
    log: Arc<EventLog>,
    client: String,
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        let mut by_client = self.log.by_client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = by_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                by_client.remove(&self.client);
            }
        }
        self.log.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The SSE form of one event: its id, its type as the event name, itself as JSON data.
fn sse(id: u64, event: &RuntimeEvent) -> Event {
    let name = match event {
        RuntimeEvent::StatusChanged { .. } => "status_changed",
        RuntimeEvent::PendingCreated { .. } => "pending_created",
        RuntimeEvent::CallStarted { .. } => "call_started",
        RuntimeEvent::CallEnded { .. } => "call_ended",
        RuntimeEvent::Console { .. } => "console",
    };
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_string());
    Event::default().id(id.to_string()).event(name).data(data)
}

/// Says that events after `after` were dropped before this client came back for them.
fn reset(after: u64) -> Event {
    Event::default().event("reset").data(
        serde_json::json!({
            "after": after,
            "error": format!("events after {after} are no longer kept (the server keeps the newest {EVENT_HISTORY}); reload the state, then follow from here"),
        })
        .to_string(),
    )
}
