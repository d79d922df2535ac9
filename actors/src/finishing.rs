//! A future that finishes even when its caller stops waiting for it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs `F` where it is awaited and, when dropped before `F` has ended,
/// hands `F` to a task of its own that runs it to its end.
///
/// A send must not be cut off between a provider's answer and its record
/// when its caller hangs up or times out. Spawning every send would keep
/// that too, but costs a task, a wake of an idle worker and a join per
/// send; on the way where the caller waits (nearly always), this costs
/// one allocation.
pub struct Finishing<F: Future + Send + 'static>
where
    F::Output: Send + 'static,
{
    /// `None` once `F` has ended.
    fut: Option<Pin<Box<F>>>,
}

impl<F: Future + Send + 'static> Finishing<F>
where
    F::Output: Send + 'static,
{
    /// Wraps `fut`; nothing runs until it is awaited.
    pub fn new(fut: F) -> Self {
        Finishing { fut: Some(Box::pin(fut)) }
    }
}

impl<F: Future + Send + 'static> Future for Finishing<F>
where
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Polled again after it ended, it never ends again (as `futures`' `Fuse`).
        let Some(fut) = self.fut.as_mut() else { return Poll::Pending };
        let out = fut.as_mut().poll(cx);
        if out.is_ready() {
            self.fut = None;
        }
        out
    }
}

impl<F: Future + Send + 'static> Drop for Finishing<F>
where
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            // Outside a runtime (it is shutting down) nothing can run it on.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(fut);
            }
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
    async fn it_runs_inline_and_answers() {
        let thread = std::thread::current().id();
        let ran_on = Finishing::new(async move { std::thread::current().id() }).await;
        assert_eq!(ran_on, thread, "awaited, it runs where it is awaited");
    }

    #[tokio::test]
    async fn dropped_unfinished_it_runs_to_its_end() {
        let ended = Arc::new(AtomicBool::new(false));
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let fut = Finishing::new({
            let ended = ended.clone();
            async move {
                let _ = wait.await;
                ended.store(true, Ordering::SeqCst);
            }
        });
        // The caller gives up before the future can end.
        assert!(tokio::time::timeout(Duration::from_millis(10), fut).await.is_err());
        assert!(!ended.load(Ordering::SeqCst));
        go.send(()).expect("the future still waits");
        for _ in 0..200 {
            if ended.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the dropped future did not run to its end");
    }
}
