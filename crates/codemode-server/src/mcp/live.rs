//! Progress notifications of one `codemode` tool call: what its execution does while it runs
//! (calls as they start and end, console lines) and what it waits for, in order, on one
//! sender task, when the client gave a progress token.

use codemode::{Runtime, RuntimeEvent};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};

/// How often a running execution's events are sent, gathered into one notification.
const LIVE_EVERY: Duration = Duration::from_millis(250);

/// The most lines of events one notification names (the others are counted).
const LIVE_LINES: usize = 3;

/// The most characters of one notification's message.
const MAX_MESSAGE_CHARS: usize = 500;

/// Notifications waiting to be sent, past which new ones are dropped (a slow client).
const QUEUE: usize = 64;

/// The longest a call's result waits for its last progress notifications to go out.
const FLUSH_WAIT: Duration = Duration::from_secs(1);

/// What the sender task is handed: a message, or a request to say when all before it went.
enum Item {
    Message(String),
    Flush(oneshot::Sender<()>),
}

/// Sends `notifications/progress` for one request, in order, with increasing progress.
#[derive(Clone)]
pub(super) struct Progress {
    queue: Option<mpsc::Sender<Item>>,
}

impl Progress {
    /// Progress for a request with `token` (none: nothing is sent).
    pub fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Progress {
        let Some(token) = token else {
            return Progress { queue: None };
        };
        let (queue, mut items) = mpsc::channel::<Item>(QUEUE);
        tokio::spawn(async move {
            let mut count = 0.0;
            let mut broken = false;
            while let Some(item) = items.recv().await {
                match item {
                    Item::Flush(done) => {
                        let _ = done.send(());
                    }
                    Item::Message(_) if broken => {}
                    Item::Message(message) => {
                        count += 1.0;
                        let mut param = ProgressNotificationParam::new(token.clone(), count);
                        param.message = Some(message);
                        if let Err(e) = peer.notify_progress(param).await {
                            tracing::debug!(error = %e, "progress notification not sent");
                            broken = true;
                        }
                    }
                }
            }
        });
        Progress { queue: Some(queue) }
    }

    /// Sends `message` (cut to [`MAX_MESSAGE_CHARS`]); dropped if the client is far behind.
    pub fn send(&self, message: String) {
        if let Some(queue) = &self.queue {
            let _ = queue.try_send(Item::Message(cut(message)));
        }
    }

    /// Follows execution `id` on `runtime`, sending what it does, until finished or dropped.
    pub fn follow(&self, runtime: &Runtime, id: &str) -> Live {
        if self.queue.is_none() {
            return Live(None);
        }
        let events = runtime.subscribe();
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(feed(events, id.to_string(), self.clone(), stopped));
        Live(Some((stop, task)))
    }

    /// Waits (briefly) until everything queued so far has been sent.
    async fn flushed(&self) {
        let Some(queue) = &self.queue else { return };
        let (done, sent) = oneshot::channel();
        if queue.send(Item::Flush(done)).await.is_ok() {
            let _ = tokio::time::timeout(FLUSH_WAIT, sent).await;
        }
    }
}

/// A running execution's events as progress, until finished or dropped.
pub(super) struct Live(Option<(oneshot::Sender<()>, tokio::task::JoinHandle<()>)>);

impl Live {
    /// Sends what is still gathered, and waits until it has gone, so it reaches the client
    /// before the call's result.
    pub async fn finish(mut self, progress: &Progress) {
        if let Some((stop, task)) = self.0.take() {
            let _ = stop.send(());
            let _ = task.await;
            progress.flushed().await;
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some((_, task)) = &self.0 {
            task.abort();
        }
    }
}

/// Gathers the execution's events and sends them every [`LIVE_EVERY`]; on `stop`, sends what
/// has arrived and ends.
async fn feed(
    mut events: broadcast::Receiver<RuntimeEvent>,
    id: String,
    progress: Progress,
    mut stop: oneshot::Receiver<()>,
) {
    let mut lines: Vec<String> = Vec::new();
    let mut tick = tokio::time::interval(LIVE_EVERY);
    let take = |event: Result<RuntimeEvent, broadcast::error::RecvError>,
                lines: &mut Vec<String>| match event {
        Ok(event) if event.execution_id() == id => {
            if let Some(line) = describe(&event) {
                lines.push(line);
            }
            true
        }
        Ok(_) => true,
        Err(broadcast::error::RecvError::Lagged(n)) => {
            lines.push(format!("({n} events skipped)"));
            true
        }
        Err(broadcast::error::RecvError::Closed) => false,
    };
    loop {
        tokio::select! {
            event = events.recv() => {
                if !take(event, &mut lines) {
                    break;
                }
            }
            _ = tick.tick() => {
                if !lines.is_empty() {
                    progress.send(summary(&std::mem::take(&mut lines)));
                }
            }
            _ = &mut stop => {
                loop {
                    match events.try_recv() {
                        Ok(event) => { take(Ok(event), &mut lines); }
                        Err(broadcast::error::TryRecvError::Lagged(n)) => {
                            take(Err(broadcast::error::RecvError::Lagged(n)), &mut lines);
                        }
                        Err(_) => break,
                    }
                }
                break;
            }
        }
    }
    if !lines.is_empty() {
        progress.send(summary(&lines));
    }
}

/// One event in words, for a progress message.
fn describe(event: &RuntimeEvent) -> Option<String> {
    Some(match event {
        RuntimeEvent::CallStarted {
            seq,
            connector,
            method,
            ..
        } => format!("{connector}.{method} started (#{seq})"),
        RuntimeEvent::CallEnded {
            seq,
            connector,
            method,
            duration_ms,
            ok,
            ..
        } => match ok {
            true => format!("{connector}.{method} done in {duration_ms} ms (#{seq})"),
            false => format!("{connector}.{method} failed after {duration_ms} ms (#{seq})"),
        },
        RuntimeEvent::Console { line, .. } => format!("console: {line}"),
        _ => return None,
    })
}

/// The newest [`LIVE_LINES`] lines, and how many came before them.
fn summary(lines: &[String]) -> String {
    let shown = &lines[lines.len().saturating_sub(LIVE_LINES)..];
    let earlier = lines.len() - shown.len();
    let mut text = shown.join("; ");
    if earlier > 0 {
        text = format!("(+{earlier} earlier) {text}");
    }
    text
}

fn cut(text: String) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => text,
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_names_the_newest_lines_and_counts_the_rest() {
        let lines: Vec<String> = (0..5).map(|i| format!("line {i}")).collect();
        assert_eq!(summary(&lines), "(+2 earlier) line 2; line 3; line 4");
        assert_eq!(summary(&lines[..1]), "line 0");
        assert_eq!(cut("é".repeat(600)).chars().count(), MAX_MESSAGE_CHARS + 1);
    }
}
