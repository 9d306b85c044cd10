//! Bounded admission of the requests that run a pass (run, approve, resume): at most
//! `max_running` at once, at most `max_queued` more waiting in arrival order, and past both a
//! clear refusal (503 with `Retry-After`) instead of memory that grows with the load.
//!
//! An admitted pass is never stopped halfway ([`Admission::run`]): a client that goes away
//! mid-run leaves it to end as it would have (at the latest at its time limit), its execution
//! recorded. A client that goes away while queued leaves the line, and nothing of its request
//! runs.

use crate::reply::ApiError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default passes running at once (`limits.max_running`).
pub const DEFAULT_MAX_RUNNING: usize = 64;
/// Default requests waiting for a place (`limits.max_queued`).
pub const DEFAULT_MAX_QUEUED: usize = 256;
/// Seconds a refused client is told to wait.
pub const RETRY_AFTER_SECONDS: u64 = 1;

/// How many pass-running requests are admitted and queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionOptions {
    /// Passes running at once (at least 1).
    pub max_running: usize,
    /// Requests waiting for a place; more are refused with 503.
    pub max_queued: usize,
}

impl Default for AdmissionOptions {
    fn default() -> Self {
        AdmissionOptions {
            max_running: DEFAULT_MAX_RUNNING,
            max_queued: DEFAULT_MAX_QUEUED,
        }
    }
}

/// The places for running passes and the line waiting for them.
#[derive(Debug)]
pub struct Admission {
    places: Arc<Semaphore>,
    waiting: AtomicUsize,
    options: AdmissionOptions,
}

/// A place held while a pass runs.
#[derive(Debug)]
pub struct Admitted {
    _place: OwnedSemaphorePermit,
}

/// Why a request was not admitted: the line was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded(AdmissionOptions);

impl Overloaded {
    /// The refusal as the API answers it: 503, `Retry-After`, and a JSON error naming the
    /// limits.
    pub fn response(self) -> Response {
        let AdmissionOptions {
            max_running,
            max_queued,
        } = self.0;
        let message = format!(
            "the server is busy: {max_running} runs are running and {max_queued} more are waiting, its limits (limits.max_running, limits.max_queued); nothing was run, try again in {RETRY_AFTER_SECONDS} s"
        );
        let mut response = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message).into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        response
    }
}

impl IntoResponse for Overloaded {
    fn into_response(self) -> Response {
        self.response()
    }
}

/// Leaves the line when dropped (admitted, refused, or its client gone).
struct InLine<'a>(&'a AtomicUsize);

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Admission {
    /// Places and a line as `options` say (at least one place).
    pub fn new(options: AdmissionOptions) -> Admission {
        let options = AdmissionOptions {
            max_running: options.max_running.max(1),
            ..options
        };
        Admission {
            places: Arc::new(Semaphore::new(options.max_running)),
            waiting: AtomicUsize::new(0),
            options,
        }
    }

    /// The limits in force.
    pub fn options(&self) -> AdmissionOptions {
        self.options
    }

    /// Requests waiting for a place now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// A place: at once if one is free, else after the requests ahead in line; refused when
    /// the line is full.
    pub async fn enter(&self) -> Result<Admitted, Overloaded> {
        if let Ok(permit) = self.places.clone().try_acquire_owned() {
            return Ok(Admitted { _place: permit });
        }
        let ahead = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _in_line = InLine(&self.waiting);
        if ahead >= self.options.max_queued {
            return Err(Overloaded(self.options));
        }
        match self.places.clone().acquire_owned().await {
            Ok(permit) => Ok(Admitted { _place: permit }),
            // The semaphore is never closed; were it, refusing is the safe answer.
            Err(_) => Err(Overloaded(self.options)),
        }
    }

    /// Runs `pass` once admitted, holding the place until it ends. It runs on the caller's
    /// task; if the caller stops waiting for it (its client went away), what is left of it is
    /// handed to a task of its own and runs to its end.
    pub async fn run<T, F>(&self, pass: F) -> Result<T, Overloaded>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let admitted = self.enter().await?;
        let pass = async move {
            let out = pass.await;
            drop(admitted);
            out
        };
        Ok(Finished(Some(Box::pin(pass))).await)
    }
}

/// A future that is never dropped halfway: dropped before it ends, it is spawned to end on its
/// own (its output is dropped). Without a tokio runtime to spawn on, it is dropped.
struct Finished<T: Send + 'static>(Option<Pin<Box<dyn Future<Output = T> + Send>>>);

impl<T: Send + 'static> Future for Finished<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(inner) = self.0.as_mut() else {
            return Poll::Pending;
        };
        let out = ready!(inner.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(out)
    }
}

impl<T: Send + 'static> Drop for Finished<T> {
    fn drop(&mut self) {
        if let (Some(rest), Ok(handle)) = (self.0.take(), Handle::try_current()) {
            handle.spawn(async move {
                let _ = rest.await;
            });
        }
    }
}

/// What a route that runs a pass answers when it has no outcome: an API error, or a refusal.
#[derive(Debug)]
pub enum RunError {
    /// The request or the runtime failed.
    Api(ApiError),
    /// The line was full; nothing ran.
    Overloaded(Overloaded),
}

impl From<ApiError> for RunError {
    fn from(e: ApiError) -> Self {
        RunError::Api(e)
    }
}

impl From<codemode::RuntimeError> for RunError {
    fn from(e: codemode::RuntimeError) -> Self {
        RunError::Api(e.into())
    }
}

impl From<Overloaded> for RunError {
    fn from(o: Overloaded) -> Self {
        RunError::Overloaded(o)
    }
}

impl IntoResponse for RunError {
    fn into_response(self) -> Response {
        match self {
            RunError::Api(e) => e.into_response(),
            RunError::Overloaded(o) => o.response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_places_and_the_line_a_request_is_refused_and_a_freed_place_admits_the_next() {
        let admission = Admission::new(AdmissionOptions {
            max_running: 1,
            max_queued: 1,
        });
        let first = admission.enter().await.expect("a free place");
        let admission = Arc::new(admission);
        let queued = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.enter().await.map(|_| ()) })
        };
        while admission.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        let refused = admission.enter().await.expect_err("the line is full");
        let response = refused.response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        drop(first);
        queued
            .await
            .expect("task")
            .expect("admitted once the place is free");
        assert_eq!(admission.waiting(), 0);
        admission.enter().await.expect("the place is free again");
    }

    #[tokio::test]
    async fn a_request_that_gives_up_in_line_leaves_it() {
        let admission = Arc::new(Admission::new(AdmissionOptions {
            max_running: 1,
            max_queued: 1,
        }));
        let held = admission.enter().await.expect("a free place");
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.enter().await.map(|_| ()) })
        };
        while admission.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(admission.waiting(), 0);
        drop(held);
    }

    #[tokio::test]
    async fn a_run_whose_caller_stops_waiting_still_runs_to_its_end_and_frees_its_place() {
        let admission = Arc::new(Admission::new(AdmissionOptions {
            max_running: 1,
            max_queued: 0,
        }));
        let (started, on_start) = tokio::sync::oneshot::channel::<()>();
        let (go, on_go) = tokio::sync::oneshot::channel::<()>();
        let (ended, on_end) = tokio::sync::oneshot::channel::<()>();
        let caller = {
            let admission = admission.clone();
            tokio::spawn(async move {
                admission
                    .run(async move {
                        let _ = started.send(());
                        let _ = on_go.await;
                        let _ = ended.send(());
                    })
                    .await
            })
        };
        on_start.await.expect("the run started");
        caller.abort();
        assert!(caller.await.is_err(), "the caller was stopped");
        let _ = go.send(());
        on_end.await.expect("the run went on to its end");
        // The place was given back when the detached run ended.
        admission.enter().await.expect("the place is free again");
    }
}
