//! Async tools: a tool written as an async function, run on the caller's
//! tokio runtime. The gate calls tools synchronously from the guest's own
//! thread; the future runs as a task on the runtime it was registered with,
//! and the call waits for it, within the wall time left and until a
//! cancel (which aborts the task).

use super::{Tool, ToolError, ToolLimits, ToolRegistry};
use std::future::Future;
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

impl ToolRegistry {
    /// Register an untyped async tool (the input text in, the output text
    /// out; [`ToolRegistry::add_async_tool`] is the typed way): each call
    /// runs `f(input)` as a task on
    /// `runtime` (e.g. `tokio::runtime::Handle::current()` where the agent
    /// framework runs) and waits for it.
    ///
    /// The waiting thread must not be one `runtime` needs to make progress:
    /// calls from a wasm run ([`crate::wasm`]) wait on the guest's own
    /// thread, which is fine; a plan run with [`crate::Sandbox::run`]
    /// belongs on a blocking thread (`spawn_blocking`), not inside a task
    /// of a single-threaded runtime (there the task could not run until
    /// the wall budget ended the wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::tools::{ToolLimits, ToolRegistry};
    ///
    /// let rt = tokio::runtime::Runtime::new()?;
    /// let mut tools = ToolRegistry::new();
    /// tools.register_async("later", rt.handle().clone(), |input: String| async move {
    ///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    ///     Ok(input.len().to_string())
    /// });
    /// let limits = ToolLimits::new(std::time::Duration::from_secs(5), 100);
    /// assert_eq!(tools.get("later").unwrap().call("four", limits).unwrap(), "4");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_async<F, Fut>(
        &mut self,
        name: impl Into<String>,
        runtime: tokio::runtime::Handle,
        f: F,
    ) -> &mut Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        self.register(name, AsyncTool { runtime, f })
    }
}

struct AsyncTool<F> {
    runtime: tokio::runtime::Handle,
    f: F,
}

impl<F, Fut> Tool for AsyncTool<F>
where
    F: Fn(String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    fn call(&self, input: &str, limits: ToolLimits) -> Result<String, ToolError> {
        wait_for(&self.runtime, (self.f)(input.to_string()), &limits)
    }
}

/// A tool's `future` run as a task on `runtime` and waited for within
/// `limits` (time left, cancel): its result, or why there is none.
pub(crate) fn wait_for<T: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    future: impl Future<Output = Result<T, ToolError>> + Send + 'static,
    limits: &ToolLimits,
) -> Result<T, ToolError> {
    match wait_on(runtime, future, limits.timeout, &limits.cancel) {
        Ok(result) => result,
        Err(Unfinished::Cancelled) => Err(ToolError::Cancelled),
        Err(Unfinished::Timeout) => Err(ToolError::Timeout),
        Err(Unfinished::Lost) => Err(ToolError::Failed(
            "the tool's task ended without a result (it panicked, or its runtime \
             shut down)"
                .into(),
        )),
    }
}

/// Why [`wait_on`] has no result.
pub(crate) enum Unfinished {
    Cancelled,
    Timeout,
    /// The task ended without one (it panicked, or its runtime shut down).
    Lost,
}

/// Run `future` as a task on `runtime` and wait for it on this thread (a
/// guest's own, never one the runtime needs), for at most `timeout` and
/// until `cancel` is thrown: either aborts the task.
pub(crate) fn wait_on<T: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    future: impl Future<Output = T> + Send + 'static,
    timeout: Duration,
    cancel: &crate::CancelHandle,
) -> Result<T, Unfinished> {
    let (tx, rx) = sync_channel(1);
    let task = runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    let deadline = Instant::now() + timeout;
    loop {
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(result) => return Ok(result),
            Err(RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                task.abort();
                return Err(Unfinished::Cancelled);
            }
            Err(RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                task.abort();
                return Err(Unfinished::Timeout);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(Unfinished::Lost),
        }
    }
}
