//! Cancelling a run from outside it: a cloneable handle the caller keeps,
//! and every part of a run that can wait checks.
//!
//! What "promptly" means, measured by the tests: guest code stops at its
//! next epoch tick (every 10 ms); a guest waiting in WASI (a sleep, a read
//! of stdin) stops at once; a command tool is killed within its 2 ms poll;
//! a fetch in flight is abandoned within 5 ms (its connection closes at its
//! own deadline, in the background); a plan stops before its next op. An
//! in-process [`Tool`](crate::tools::Tool) stops when it returns: it can
//! poll [`ToolLimits::cancel`](crate::tools::ToolLimits::cancel) to return
//! early. The report and the audit of what was done so far are kept, with
//! status `cancelled`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cancel switch for one run (or several): clone it, give one clone to
/// the run, keep the other. Cancelling is permanent.
///
/// # Examples
///
/// ```
/// use sbx_wasm::CancelHandle;
///
/// let cancel = CancelHandle::new();
/// let for_the_run = cancel.clone();
/// assert!(!for_the_run.is_cancelled());
/// cancel.cancel();
/// assert!(for_the_run.is_cancelled());
/// ```
#[derive(Clone, Debug, Default)]
pub struct CancelHandle {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    #[cfg(feature = "wasm")]
    notify: tokio::sync::Notify,
}

impl CancelHandle {
    /// A handle not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel every run holding a clone of this handle.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        #[cfg(feature = "wasm")]
        self.inner.notify.notify_waiters();
    }

    /// Whether [`cancel`](CancelHandle::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Wait until cancelled.
    #[cfg(feature = "wasm")]
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Whether `cancel`, when there is one, was cancelled.
pub(crate) fn is_cancelled(cancel: Option<&CancelHandle>) -> bool {
    cancel.is_some_and(CancelHandle::is_cancelled)
}

/// Why [`unless_cancelled`] has no result.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Abandoned {
    /// The cancel came first.
    Cancelled,
    /// No thread could be started, or `f` panicked.
    Failed(&'static str),
}

/// Run `f` on a thread of its own and wait for it, unless `cancel` comes
/// first: then [`Abandoned::Cancelled`], at most 5 ms after the cancel, and
/// `f` is left to finish in the background (its own deadline bounds it).
/// For effects that block in code that cannot be interrupted (a socket
/// read, an in-process tool).
pub(crate) fn unless_cancelled<T: Send + 'static>(
    cancel: &CancelHandle,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Abandoned> {
    use std::sync::mpsc::{RecvTimeoutError, sync_channel};
    use std::time::Duration;
    if cancel.is_cancelled() {
        return Err(Abandoned::Cancelled);
    }
    let (tx, rx) = sync_channel(1);
    std::thread::Builder::new()
        .name("sbx-effect".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|_| Abandoned::Failed("no thread could be started for it"))?;
    loop {
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                return Err(Abandoned::Cancelled);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(Abandoned::Failed("it panicked")),
        }
    }
}
