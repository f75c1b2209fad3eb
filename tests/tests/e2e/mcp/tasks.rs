//! Tasks (the tasks extension) through the official Rust SDK's client over
//! stdio and raw sessionless HTTP: a long run becomes a task polled to its
//! result and told at its end, a short one is answered (as is a long one
//! for a client without the extension); `tasks/cancel` halts the run with
//! its audit kept and its slot freed; a task is found only from the
//! session or workspace that made it, after the request that made it has
//! closed its connection.

use super::{Fixture, HttpServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, GetTaskParams, Implementation, TaskPayload, TaskStatus,
    TaskStatusNotificationParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use sbx_wasm_tests::sbx_bin;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client that declares the tasks extension (or not) and keeps the task
/// notices it hears.
#[derive(Clone, Default)]
struct Client {
    tasks: bool,
    told: Arc<Mutex<Vec<(String, TaskStatus)>>>,
}

impl ClientHandler for Client {
    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        let task = &params.task;
        (self.told.lock().unwrap()).push((task.task.task_id.clone(), task.status()));
    }

    fn get_info(&self) -> ClientConfig {
        let caps = match self.tasks {
            true => ClientCapabilities::builder().enable_tasks().build(),
            false => ClientCapabilities::default(),
        };
        ClientConfig::new(caps, Implementation::new("tasks-test", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, Client>;

async fn stdio(f: &Fixture, client: Client, extra: &[&str]) -> Session {
    let mut args = vec!["--task-after-ms", "300"];
    args.extend(extra);
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(&args)).envs(f.env());
    });
    client
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// A script that runs for about `secs` seconds (sleeping, so spending
/// little fuel), then prints `done`.
fn takes(secs: f64) -> String {
    format!(
        "import time\nt = time.time()\nwhile time.time() - t < {secs}:\n    time.sleep(0.02)\nprint('done')"
    )
}

async fn call(s: &Session, code: &str) -> CallToolResponse {
    let args = json!({ "code": code }).as_object().unwrap().clone();
    let params = CallToolRequestParams::new("run_python").with_arguments(args);
    s.call_tool_once(params).await.unwrap()
}

/// What a run printed, from its structured answer.
fn stdout(r: &CallToolResult) -> &str {
    let out = r
        .structured_content
        .as_ref()
        .and_then(|v| v["stdout"].as_str());
    out.unwrap_or_else(|| panic!("no stdout: {r:?}"))
}

/// Poll `id` until it ends (at most 60 s): its last state.
async fn until_ended(s: &Session, id: &str) -> rmcp::model::DetailedTask {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = s.get_task(GetTaskParams::new(id)).await.unwrap().task;
        if got.status().is_terminal() {
            return got;
        }
        assert!(Instant::now() < deadline, "the task never ended: {got:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_run_becomes_a_task_polled_to_its_result_and_told_at_its_end() {
    let f = Fixture::new();
    let before = f.host_state();
    let client = Client {
        tasks: true,
        ..Client::default()
    };
    let s = stdio(&f, client.clone(), &[]).await;
    let caps = s.peer_info().unwrap().capabilities.clone();
    assert!(caps.supports_tasks(), "{caps:?}");

    // The allowed neighbour: a short run is answered, no task made.
    let CallToolResponse::Complete(short) = call(&s, "print(1)").await else {
        panic!("a short run became a task")
    };
    assert_eq!(stdout(&short), "1\n");

    let CallToolResponse::Task(made) = call(&s, &takes(1.5)).await else {
        panic!("a long run was not made a task")
    };
    let id = made.task.task_id.clone();
    assert_eq!(made.task.status, TaskStatus::Working);
    assert!(made.task.ttl_ms.unwrap() >= 300_000, "{made:?}");
    let ended = until_ended(&s, &id).await;
    let TaskPayload::Completed { result } = &ended.payload else {
        panic!("not completed: {ended:?}")
    };
    let answer: CallToolResult = serde_json::from_value(Value::Object(result.clone())).unwrap();
    assert_eq!(answer.is_error, Some(false), "{answer:?}");
    assert_eq!(stdout(&answer), "done\n");
    // The end is told as well (sent after the manager recorded it).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client
        .told
        .lock()
        .unwrap()
        .contains(&(id.clone(), TaskStatus::Completed))
    {
        assert!(Instant::now() < deadline, "no notifications/tasks for {id}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An id this session never made is unknown (-32602), not a panic.
    let unknown = s.get_task(GetTaskParams::new("not-a-task")).await;
    assert!(
        format!("{unknown:?}").contains("unknown task"),
        "{unknown:?}"
    );
    s.cancel().await.unwrap();

    // A client without the extension waits for the same long run.
    let s = stdio(&f, Client::default(), &[]).await;
    let CallToolResponse::Complete(waited) = call(&s, &takes(1.0)).await else {
        panic!("a task for a client that did not declare the extension")
    };
    assert_eq!(stdout(&waited), "done\n");
    s.cancel().await.unwrap();
    assert_eq!(f.host_state(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_cancel_halts_the_run_keeps_its_audit_and_frees_its_slot() {
    let f = Fixture::new();
    let before = f.host_state();
    let client = Client {
        tasks: true,
        ..Client::default()
    };
    // One run slot: the call after the cancelled one needs the slot the
    // task held.
    let s = stdio(
        &f,
        client,
        &["--max-concurrent", "1", "--queue-wait-ms", "5000"],
    )
    .await;
    let forever = "open('/work/out/started.txt', 'w').write('x')\nimport time\nwhile True:\n    time.sleep(0.02)";
    let CallToolResponse::Task(made) = call(&s, forever).await else {
        panic!("no task")
    };
    let id = made.task.task_id.clone();
    s.cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    let ended = until_ended(&s, &id).await;
    assert_eq!(ended.status(), TaskStatus::Cancelled, "{ended:?}");
    // The run's audit was written: its write, then its cancelled end.
    let audit = f.audit();
    let wrote = audit.iter().any(|v| {
        v["op"] == "fs_write"
            && v["decision"] == "allowed"
            && v["target"] == "/work/out/started.txt"
    });
    assert!(wrote, "{audit:?}");
    let ends = f.ends();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["end"]["violation"], "cancelled", "{ends:?}");
    // Its slot is free again: the next call runs.
    let CallToolResponse::Complete(after) = call(&s, "print(2)").await else {
        panic!("a short run became a task")
    };
    assert_eq!(stdout(&after), "2\n");
    // Cancelling an ended task is acknowledged and changes nothing.
    s.cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    let still = s.get_task(GetTaskParams::new(id)).await.unwrap().task;
    assert_eq!(still.status(), TaskStatus::Cancelled);
    s.cancel().await.unwrap();
    assert_eq!(f.host_state(), before);
    assert_eq!(
        std::fs::read_to_string(f.path("out/started.txt")).unwrap(),
        "x"
    );
}

/// One sessionless request with the tasks extension declared: its answer.
fn sessionless(server: &HttpServer, workspace: Option<&str>, method: &str, params: Value) -> Value {
    let caps = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let messages = super::sessionless_post(server, workspace, method, params, caps, None);
    messages.into_iter().last().unwrap()
}

#[test]
fn a_sessionless_task_outlives_its_request_and_only_its_workspace_finds_it() {
    let f = Fixture::new();
    let server = f.http(&["--task-after-ms", "200"]);
    let issued = server.reply_of("POST", "/mcp/workspaces", &[], b"");
    let handle: Value = serde_json::from_str(&issued.1).unwrap();
    let handle = handle["workspace"].as_str().unwrap().to_string();
    let call = json!({ "name": "run_python", "arguments": { "code": takes(1.5) } });
    let made = sessionless(&server, Some(&handle), "tools/call", call);
    let id = made["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{made}"));
    // The request's connection is closed; the run goes on. Another
    // workspace (here the server's default one) does not find the task.
    let elsewhere = sessionless(&server, None, "tasks/get", json!({ "taskId": id }));
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        let got = sessionless(&server, Some(&handle), "tasks/get", json!({ "taskId": id }));
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(Instant::now() < deadline, "never ended: {got}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(
        got["result"]["result"]["structuredContent"]["stdout"], "done\n",
        "{got}"
    );
}
