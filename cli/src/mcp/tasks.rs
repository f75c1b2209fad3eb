//! Tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`): a
//! program call (`run_python`, `run_wasm`, a catalog script) from a client
//! that declared the extension, still running after `--task-after-ms`, is
//! answered with a task the client polls (`tasks/get`), may cancel
//! (`tasks/cancel`) and hears the end of (`notifications/tasks`).
//!
//! Why a task is safe to leave running: it holds its run slot and its
//! session's call, as any call does, and its run ends within the grant's
//! wall budget whatever the client does (its connection may drop: the run
//! goes on, and its result waits for a poll). A task belongs to the session
//! (or workspace) that made it; another session's `tasks/get` does not find
//! it. A session keeps at most [`MAX_TASKS`] at once; past that a call is
//! answered when it ends, as without the extension. Cancelling throws the
//! run's cancel switch: it halts, writes its audit (the ops so far and a
//! `cancelled` end), and the task ends `cancelled`.

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, DetailedTask, ServerNotification, TaskStatusNotification,
    TaskStatusNotificationParams,
};
use rmcp::service::{Peer, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The most tasks one session keeps (running, or ended and not yet
/// expired): each holds its result until it expires.
pub(crate) const MAX_TASKS: usize = 64;

/// How often a client is told to poll.
const POLL_MS: u64 = 500;

/// When a call becomes a task, and how long an ended one is kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskPolicy {
    /// A program call still running after this long becomes a task.
    pub(crate) after: Duration,
    /// How long a task is kept after its run's wall budget (so after it
    /// ended, whenever that was).
    pub(crate) keep: Duration,
}

/// One session's tasks.
#[derive(Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    /// The ids made here and not yet seen expired.
    ids: Mutex<Vec<String>>,
}

impl Tasks {
    /// Whether one more task may be made: the expired ones are forgotten
    /// first.
    pub(crate) fn has_room(&self) -> bool {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        ids.retain(|id| self.manager.get_task(id).is_ok());
        ids.len() < MAX_TASKS
    }

    pub(crate) fn get(&self, id: &str) -> Result<DetailedTask, ErrorData> {
        self.manager.get_task(plausible(id)?)
    }

    pub(crate) fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        self.manager.cancel_task(plausible(id)?)
    }

    /// `tasks/update`: these tasks never ask for input, so a known task's
    /// responses are acknowledged and dropped (as the extension says of
    /// keys nothing waits for).
    pub(crate) fn update(&self, id: &str) -> Result<(), ErrorData> {
        self.manager.update_task(plausible(id)?, std::iter::empty())
    }
}

/// `id` if it could be a task id (the manager's errors repeat the id: one
/// longer than any it makes is refused without it).
fn plausible(id: &str) -> Result<&str, ErrorData> {
    if id.len() <= 64 {
        return Ok(id);
    }
    Err(ErrorData::invalid_params(
        format!("unknown task: its id is {} bytes long", id.len()),
        None,
    ))
}

/// What a program call answers: its result when it ended within the
/// policy's wait, else the task it became.
pub(crate) enum Outcome {
    Ended(CallToolResult),
    Task(rmcp::model::Task),
}

/// Run `work` (which runs under `cancel`) as a call that may become a task
/// of `tasks`: the client's cancellation of the request (`request`) stops
/// it until then; once a task, only `tasks/cancel` (or shutdown, through
/// the run's own switch) does. `wall` is the run's wall budget; `tell`
/// hears the task's end.
pub(crate) async fn run_as_task<W, T, F>(
    work: W,
    (cancel, request): (CancellationToken, CancellationToken),
    (tasks, policy, wall): (&Tasks, TaskPolicy, Duration),
    tell: T,
) -> Outcome
where
    W: Future<Output = CallToolResult> + Send + 'static,
    T: FnOnce(DetailedTask) -> F + Send + 'static,
    F: Future<Output = ()> + Send,
{
    let mut work = tokio::spawn(work);
    // A call dropped before it ends (its client went) stops its run; once
    // a task, the guard moves into it, so an expired task stops too.
    let guard = cancel.clone().drop_guard();
    tokio::select! {
        done = &mut work => return Outcome::Ended(joined(done)),
        () = request.cancelled() => {
            cancel.cancel();
            return Outcome::Ended(joined(work.await));
        }
        () = tokio::time::sleep(policy.after) => {}
    }
    let (ended_tx, ended) = tokio::sync::oneshot::channel::<()>();
    let ttl = wall + policy.keep;
    let options = TaskOptions::new()
        .with_ttl_ms(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
        .with_poll_interval_ms(POLL_MS)
        .with_status_message("running");
    let task = tasks.manager.spawn(options, move |context| {
        Box::pin(async move {
            let _guard = guard;
            let outcome = tokio::select! {
                done = &mut work => Ok(joined(done)),
                () = context.cancelled() => {
                    cancel.cancel();
                    // The run halts at its next check and writes its audit.
                    let _ = work.await;
                    Err(TaskExit::Cancelled)
                }
            };
            let _ = ended_tx.send(());
            outcome
        })
    });
    (tasks.ids.lock().unwrap_or_else(|p| p.into_inner())).push(task.task_id.clone());
    let (manager, id) = (tasks.manager.clone(), task.task_id.clone());
    tokio::spawn(async move {
        if let Some(end) = recorded_end(&manager, &id, ended).await {
            tell(end).await;
        }
    });
    Outcome::Task(task)
}

/// `notifications/tasks` with a task's end, to the client of `peer` (a
/// client that is gone is not told).
pub(crate) async fn notify(peer: Peer<RoleServer>, end: DetailedTask) {
    let note = TaskStatusNotification::new(TaskStatusNotificationParams::from(end));
    let _ = (peer.send_notification(ServerNotification::TaskStatusNotification(note))).await;
}

/// A run's answer; a run that panicked (a bug) is an error result, not a
/// lost task.
fn joined(done: Result<CallToolResult, tokio::task::JoinError>) -> CallToolResult {
    done.unwrap_or_else(|e| {
        tracing::error!("a call's work failed: {e}");
        CallToolResult::error(vec![rmcp::model::ContentBlock::text(
            "the call failed inside the server",
        )])
    })
}

/// Once the task's work has ended, its end as the manager recorded it (it
/// records just after the work returns: wait for that, for at most a
/// second); `None` if the task was dropped instead.
async fn recorded_end(
    manager: &TaskManager,
    id: &str,
    ended: tokio::sync::oneshot::Receiver<()>,
) -> Option<DetailedTask> {
    ended.await.ok()?;
    for _ in 0..200 {
        let task = manager.get_task(id).ok()?;
        if task.status().is_terminal() {
            return Some(task);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// The manager's own tests cover its states; these cover what this module
/// adds: the cap and the answer of a call that ends in time.
#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock as Content, TaskPayload, TaskStatus};

    const POLICY: TaskPolicy = TaskPolicy {
        after: Duration::from_millis(50),
        keep: Duration::from_secs(60),
    };
    const WALL: Duration = Duration::from_secs(10);

    /// Work that says whether it saw its cancel switch thrown, after
    /// `ms` (or as soon as it is thrown).
    fn work(ms: u64, cancel: &CancellationToken) -> impl Future<Output = CallToolResult> + use<> {
        let seen = cancel.clone();
        async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = seen.cancelled() => {}
            }
            let text = format!("cancelled={}", seen.is_cancelled());
            CallToolResult::success(vec![Content::text(text)])
        }
    }

    type Told = tokio::sync::mpsc::UnboundedReceiver<DetailedTask>;

    async fn start(
        ms: u64,
        tasks: &Tasks,
    ) -> (Outcome, CancellationToken, CancellationToken, Told) {
        let (cancel, request) = (CancellationToken::new(), CancellationToken::new());
        let (tx, told) = tokio::sync::mpsc::unbounded_channel();
        let tell = move |end| async move {
            let _ = tx.send(end);
        };
        let w = work(ms, &cancel);
        let got = run_as_task(
            w,
            (cancel.clone(), request.clone()),
            (tasks, POLICY, WALL),
            tell,
        );
        (got.await, cancel, request, told)
    }

    fn text(r: &CallToolResult) -> &str {
        &r.content[0].as_text().unwrap().text
    }

    #[test]
    fn unknown_ids_are_errors_that_do_not_repeat_a_long_id() {
        let tasks = Tasks::default();
        assert!(tasks.get("nope").is_err() && tasks.cancel("nope").is_err());
        assert!(tasks.update("nope").is_err());
        let long = "x".repeat(1 << 20);
        let refused = tasks.get(&long).unwrap_err();
        assert!(refused.message.len() < 100, "{}", refused.message);
    }

    #[tokio::test]
    async fn a_call_that_ends_in_time_is_answered_and_makes_no_task() {
        let tasks = Tasks::default();
        let (got, _, _, _) = start(1, &tasks).await;
        let Outcome::Ended(r) = got else {
            panic!("became a task")
        };
        assert_eq!(text(&r), "cancelled=false");
        assert!(tasks.ids.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_requests_cancellation_stops_the_run_before_it_is_a_task() {
        let tasks = Tasks::default();
        let (cancel, request) = (CancellationToken::new(), CancellationToken::new());
        request.cancel();
        let w = work(60_000, &cancel);
        let got = run_as_task(w, (cancel, request), (&tasks, POLICY, WALL), |_| async {});
        let Outcome::Ended(r) = got.await else {
            panic!("became a task")
        };
        assert_eq!(text(&r), "cancelled=true");
    }

    #[tokio::test]
    async fn a_long_call_becomes_a_task_whose_end_is_polled_and_told() {
        let tasks = Tasks::default();
        let (got, _, request, mut told) = start(300, &tasks).await;
        let Outcome::Task(task) = got else {
            panic!("no task")
        };
        assert_eq!(task.status, TaskStatus::Working);
        assert_eq!(task.ttl_ms, Some(70_000));
        assert_eq!(
            tasks.get(&task.task_id).unwrap().status(),
            TaskStatus::Working
        );
        // Once a task, the request's own cancellation no longer reaches it.
        request.cancel();
        let end = told.recv().await.unwrap();
        assert_eq!(end.status(), TaskStatus::Completed);
        let TaskPayload::Completed { result } = tasks.get(&task.task_id).unwrap().payload else {
            panic!("not completed")
        };
        assert_eq!(result["content"][0]["text"], "cancelled=false");
        tasks.update(&task.task_id).unwrap();
    }

    #[tokio::test]
    async fn tasks_cancel_throws_the_runs_switch_and_ends_cancelled() {
        let tasks = Tasks::default();
        let (got, cancel, _, mut told) = start(60_000, &tasks).await;
        let Outcome::Task(task) = got else {
            panic!("no task")
        };
        tasks.cancel(&task.task_id).unwrap();
        let end = told.recv().await.unwrap();
        assert_eq!(end.status(), TaskStatus::Cancelled);
        assert!(cancel.is_cancelled());
    }

    #[tokio::test]
    async fn a_session_keeps_at_most_max_tasks_and_forgets_expired_ones() {
        let tasks = Tasks::default();
        let mut ids = Vec::new();
        for _ in 0..MAX_TASKS {
            let (got, _, _, _) = start(60_000, &tasks).await;
            let Outcome::Task(t) = got else {
                panic!("no task")
            };
            ids.push(t.task_id);
        }
        assert!(!tasks.has_room());
        tasks.ids.lock().unwrap().push("expired".into());
        tasks.ids.lock().unwrap().remove(0);
        tasks.manager.shutdown();
        // Every id is gone from the manager now: all are forgotten.
        assert!(tasks.has_room());
        assert!(tasks.get(&ids[0]).is_err() && tasks.cancel("nope").is_err());
    }
}
