//! A write's future: polled inline while the pass waits for it (no task hand-off), and, if the
//! pass stops waiting before it ends (the code returned without awaiting it, or a cancel),
//! finished as a task of its own, so it is still recorded.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future that finishes as a task of its own if dropped before it ends.
pub(super) struct FinishOnDrop<T: Send + 'static> {
    future: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    handle: tokio::runtime::Handle,
}

impl<T: Send + 'static> FinishOnDrop<T> {
    /// `future`, finished on `handle` if dropped early.
    pub fn new(
        handle: tokio::runtime::Handle,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Self {
        FinishOnDrop {
            future: Some(Box::pin(future)),
            handle,
        }
    }
}

impl<T: Send + 'static> Future for FinishOnDrop<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let Some(future) = this.future.as_mut() else {
            return Poll::Pending;
        };
        match future.as_mut().poll(cx) {
            Poll::Ready(out) => {
                this.future = None;
                Poll::Ready(out)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: Send + 'static> Drop for FinishOnDrop<T> {
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            self.handle.spawn(async move {
                let _ = future.await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_future_dropped_early_still_finishes() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let f = FinishOnDrop::new(tokio::runtime::Handle::current(), async move {
            let _ = rx.await;
            flag.store(true, Ordering::SeqCst);
        });
        // Polled once (it waits), then dropped: it goes on as a task.
        assert!(tokio::time::timeout(Duration::from_millis(10), f)
            .await
            .is_err());
        assert!(!done.load(Ordering::SeqCst));
        tx.send(()).unwrap();
        for _ in 0..100 {
            if done.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the dropped future did not finish");
    }

    #[tokio::test]
    async fn an_awaited_future_runs_inline() {
        let f = FinishOnDrop::new(tokio::runtime::Handle::current(), async { 7 });
        assert_eq!(f.await, 7);
    }
}
