//! The host's reshaping of a completed result for the model: sync or async. One that fails
//! (an error, or a panic) leaves the model the untransformed value cut to the result budget,
//! with a log line saying so; the audit record keeps the original either way.

use crate::value::{truncate_result, TruncateOptions};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Reshapes a completed result before the model sees it; an `Err` says why it could not.
pub type TransformResult =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// A transform from a plain function.
pub(crate) fn from_sync(
    transform: impl Fn(Value) -> Value + Send + Sync + 'static,
) -> TransformResult {
    let transform = Arc::new(transform);
    Arc::new(move |value| {
        let transform = transform.clone();
        async move { Ok(transform(value)) }.boxed()
    })
}

/// A transform from an async function.
pub(crate) fn from_async<F, Fut>(transform: F) -> TransformResult
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, String>> + Send + 'static,
{
    Arc::new(move |value| transform(value).boxed())
}

/// `value` as the model should see it, and the line to add to the logs when the transform
/// failed.
pub(crate) async fn shown(
    transform: Option<&TransformResult>,
    value: Value,
) -> (Value, Option<String>) {
    let Some(transform) = transform else {
        return (value, None);
    };
    let kept = value.clone();
    let why = match AssertUnwindSafe(async { transform(value).await })
        .catch_unwind()
        .await
    {
        Ok(Ok(shaped)) => return (shaped, None),
        Ok(Err(why)) => why,
        Err(_) => "it panicked".to_string(),
    };
    tracing::warn!("transform_result failed ({why}); the model gets the result untransformed, cut to the result budget");
    let line = format!(
        "[codemode] the result transform failed ({why}); this is the result untransformed, cut to the result budget"
    );
    (
        truncate_result(kept, TruncateOptions::default()),
        Some(line),
    )
}
