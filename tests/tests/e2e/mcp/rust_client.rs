//! The official MCP Rust SDK's client against `sbx-wasm mcp`: stdio with
//! components, session scratch, progress, cancel, capacity and session
//! totals; HTTP with a bearer token, `Origin` checks and two sessions.

use super::{Fixture, INITIALIZE};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use sbx_wasm_tests::sbx_bin;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client that keeps every progress message it receives, with its
/// progress value (notifications may be handled out of order; the values
/// count up, so they give the order back).
#[derive(Clone, Default)]
pub(super) struct Client(Arc<Mutex<Vec<(String, f64, String)>>>);

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push((
            format!("{:?}", params.progress_token),
            params.progress,
            params.message.unwrap_or_default(),
        ));
    }
}

type Session = RunningService<RoleClient, Client>;

/// A script that runs until cancelled (or `max_wall`), spending little
/// fuel.
const FOREVER: &str = "import time\nwhile True:\n    time.sleep(0.01)";

pub(super) async fn stdio(f: &Fixture, extra: &[&str], client: Client) -> Session {
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(extra)).envs(f.env());
    });
    client
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

pub(super) async fn http(url: &str, token: &str) -> Session {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some(token.to_string());
    Client::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

pub(super) async fn call(s: &Session, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().unwrap().clone();
    s.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap()
}

/// The names of the tools a session lists.
async fn tool_names(s: &Session) -> Vec<String> {
    let tools = s.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

pub(super) fn field<'a>(r: &'a CallToolResult, key: &str) -> &'a Value {
    &r.structured_content.as_ref().unwrap()[key]
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_sdk_over_stdio() {
    let f = Fixture::new();
    let before = f.host_state();
    let client = Client::default();
    let s = stdio(&f, &[], client.clone()).await;
    assert_eq!(
        s.peer_info().unwrap().server_info.clone().unwrap().name,
        "sbx-wasm"
    );
    let tools = tool_names(&s).await;
    assert!(tools.contains(&"run_wasm".to_string()), "{tools:?}");

    // A component from the components folder; a path is not a name.
    let r = call(&s, "run_wasm", json!({"component": "benign.wasm"})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(
        field(&r, "stdout").as_str().unwrap().contains('5'),
        "{}",
        text(&r)
    );
    for bad in [
        "../caps.toml",
        "/etc/passwd",
        "missing.wasm",
        ".hidden.wasm",
    ] {
        let r = call(&s, "run_wasm", json!({"component": bad})).await;
        assert_eq!(r.is_error, Some(true), "{bad}");
        assert_eq!(field(&r, "status"), "refused", "{bad}");
    }

    // Single ops: the denied write beside the allowed one.
    let r = call(
        &s,
        "write_file",
        json!({"path": "/work/a.txt", "content": "x"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(field(&r, "violation"), "fs_write_denied");
    let r = call(
        &s,
        "write_file",
        json!({"path": "/work/out/r.txt", "content": "ok"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(std::fs::read_to_string(f.path("out/r.txt")).unwrap(), "ok");
    // The model is told the mount by its guest path, never the host's
    // folder (the operator's audit keeps that).
    assert_eq!(field(&r, "rule"), "write mount /work/out");
    assert!(
        !r.structured_content
            .as_ref()
            .unwrap()
            .to_string()
            .contains(&*f.path("").to_string_lossy())
    );
    // A wrong type is the gate's invalid_request, not a protocol error.
    let r = call(&s, "read_file", json!({"path": 7})).await;
    assert_eq!(field(&r, "violation"), "invalid_request");
    // A tool the grant does not name is refused and on record.
    let r = call(&s, "rm_rf", json!({})).await;
    assert_eq!(field(&r, "violation"), "tool_denied");

    // The session's scratch folder keeps files between calls.
    let r = call(
        &s,
        "run_python",
        json!({"code": "open('/scratch/notes.txt', 'w').write('kept')"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let r = call(
        &s,
        "run_python",
        json!({"code": "print(open('/scratch/notes.txt').read())"}),
    )
    .await;
    assert_eq!(field(&r, "stdout"), "kept\n");

    // Progress: every chunk of output, as it happened, before the result.
    // Notifications of earlier calls (handled on tasks of their own) may
    // still land: this call's are the ones under a progress token not seen
    // before it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let earlier: std::collections::BTreeSet<String> = client
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|m| m.0.clone())
        .collect();
    let r = call(
        &s,
        "run_python",
        json!({"code": "for i in range(3):\n    print(i, flush=True)"}),
    )
    .await;
    assert_eq!(r.is_error, Some(false));
    // The server sends every notification before the result; this client
    // handles each on a task of its own, so the last may land just after.
    let streamed = || -> String {
        let mut messages = client.0.lock().unwrap().clone();
        messages.retain(|m| !earlier.contains(&m.0));
        messages.sort_by(|a, b| a.1.total_cmp(&b.1));
        messages
            .iter()
            .filter_map(|(_, _, m)| serde_json::from_str::<Value>(m).ok())
            .filter_map(|v| v["stdout"].as_str().map(String::from))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while streamed() != "0\n1\n2\n" && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(streamed(), "0\n1\n2\n");

    // A run that never ends, abandoned: cancelled within moments. (It
    // mostly sleeps: a spinning loop could spend its fuel before the
    // cancel on a fast machine.)
    let started = Instant::now();
    let spin = call(&s, "run_python", json!({"code": FOREVER}));
    assert!(
        tokio::time::timeout(Duration::from_millis(800), spin)
            .await
            .is_err()
    );
    let r = call(&s, "run_python", json!({"code": "print(7)"})).await;
    assert_eq!(field(&r, "stdout"), "7\n");
    assert!(started.elapsed() < Duration::from_secs(10));

    assert_eq!(f.host_state(), before, "the host changed");
    s.cancel().await.unwrap();
    let ends = f.ends();
    assert!(
        ends.iter().any(|e| e["end"]["status"] == "cancelled"),
        "{ends:?}"
    );
    assert!(
        ends.iter()
            .all(|e| e["session"] == "s1" && e["call"].is_string())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn busy_slots_and_session_totals() {
    let f = Fixture::new();
    let s = stdio(
        &f,
        &[
            "--max-concurrent",
            "1",
            "--queue-wait-ms",
            "300",
            "--session-max-calls",
            "3",
        ],
        Client::default(),
    )
    .await;
    let slow = call(
        &s,
        "run_python",
        json!({"code": "import time\ntime.sleep(2)\nprint('slow done')"}),
    );
    let quick = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        call(&s, "run_python", json!({"code": "print(1)"})).await
    };
    let (slow, quick) = tokio::join!(slow, quick);
    assert_eq!(field(&slow, "stdout"), "slow done\n");
    assert_eq!(quick.is_error, Some(true));
    assert_eq!(field(&quick, "status"), "busy");
    // Third call: allowed; fourth: the session's total is spent.
    let r = call(&s, "read_file", json!({"path": "/work/a.txt"})).await;
    assert_eq!(text(&r), "hello mcp");
    let r = call(&s, "read_file", json!({"path": "/work/a.txt"})).await;
    assert_eq!(field(&r, "status"), "refused");
    assert!(text(&r).contains("session_max_calls"), "{}", text(&r));
    s.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_sdk_over_http_with_token_and_origin_checks() {
    let f = Fixture::new();
    let token = "correct-horse-battery-staple";
    std::fs::write(f.path("token"), token).unwrap();
    let token_file = f.path("token").display().to_string();
    let mut server = f.http(&["--token-file", &token_file, "--max-request-bytes", "4096"]);

    // Refused before any MCP: no token, a wrong token, a foreign Origin,
    // a body over the limit (refused as it streams in, never held whole).
    let good = format!("Bearer {token}");
    assert_eq!(server.status_of("POST", &[], INITIALIZE), 401);
    let wrong = [("Authorization", "Bearer correct-horse-battery-stapler")];
    assert_eq!(server.status_of("POST", &wrong, INITIALIZE), 401);
    let foreign = [
        ("Authorization", good.as_str()),
        ("Origin", "http://evil.example"),
    ];
    assert_eq!(server.status_of("POST", &foreign, INITIALIZE), 403);
    // The server's own loopback origin is no rebinding attack: allowed.
    let own = server.url.trim_end_matches("/mcp").to_string();
    let port = own.rsplit(':').next().unwrap().to_string();
    for origin in [own.clone(), format!("http://localhost:{port}")] {
        let from_itself = [
            ("Authorization", good.as_str()),
            ("Origin", origin.as_str()),
        ];
        assert_eq!(
            server.status_of("POST", &from_itself, INITIALIZE),
            200,
            "{origin}"
        );
    }
    // Another port on the same host is another origin: refused.
    let other_port = [
        ("Authorization", good.as_str()),
        ("Origin", "http://127.0.0.1:1"),
    ];
    assert_eq!(server.status_of("POST", &other_port, INITIALIZE), 403);
    let allowed = [("Authorization", good.as_str())];
    // A workspace is issued under the same rules: token, Origin.
    let issue = |headers: &[(&str, &str)]| server.reply_of("POST", "/mcp/workspaces", headers, b"");
    assert!(issue(&[]).0.starts_with("HTTP/1.1 401"));
    assert!(issue(&foreign).0.starts_with("HTTP/1.1 403"));
    let (head, body) = issue(&allowed);
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
    let handle = serde_json::from_str::<Value>(&body).unwrap()["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(handle.starts_with("w_") && handle.len() == 34, "{handle}");
    let close = format!("/mcp/workspaces/{handle}");
    let closed = server.reply_of("DELETE", &close, &[], b"").0;
    assert!(closed.starts_with("HTTP/1.1 401"), "{closed}");
    let closed = server.reply_of("DELETE", &close, &allowed, b"").0;
    assert!(closed.starts_with("HTTP/1.1 204"), "{closed}");
    let big = INITIALIZE.replace("\"raw\"", &format!("\"{}\"", "x".repeat(5000)));
    assert_eq!(server.status_of("POST", &allowed, &big), 413);
    assert_eq!(server.status_of("POST", &allowed, INITIALIZE), 200);

    // Two sessions: each has its own scratch folder.
    let a = http(&server.url, token).await;
    let b = http(&server.url, token).await;
    let r = call(
        &a,
        "run_python",
        json!({"code": "open('/scratch/mine', 'w').write('a')\nprint('ok')"}),
    )
    .await;
    assert_eq!(field(&r, "stdout"), "ok\n", "{}", text(&r));
    let r = call(
        &b,
        "run_python",
        json!({"code": "import os\nprint(os.listdir('/scratch'))"}),
    )
    .await;
    assert_eq!(field(&r, "stdout"), "[]\n");
    let r = call(&b, "read_file", json!({"path": "/etc/passwd"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(field(&r, "violation"), "fs_read_denied");
    // The door's metrics: behind the token, counting what happened.
    let metric = super::metrics::metric;
    assert!(
        server
            .reply_of("GET", "/metrics", &[], b"")
            .0
            .starts_with("HTTP/1.1 401")
    );
    let posted = server.reply_of("POST", "/metrics", &allowed, b"").0;
    assert!(posted.starts_with("HTTP/1.1 405"), "{posted}");
    let (head, text) = server.reply_of("GET", "/metrics", &allowed, b"");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert_eq!(metric(&text, "sbx_mcp_runs_in_flight"), 0, "{text}");
    assert!(metric(&text, "sbx_mcp_calls_ran_total") >= 3, "{text}");
    assert!(metric(&text, "sbx_mcp_sessions_open") >= 2, "{text}");
    assert_eq!(metric(&text, "sbx_mcp_sessions_max"), 256, "{text}");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    assert_eq!(server.terminate(), Some(0));
    let sessions: std::collections::BTreeSet<String> = f
        .ends()
        .iter()
        .filter_map(|e| e["session"].as_str().map(String::from))
        .collect();
    assert!(sessions.len() >= 2, "{sessions:?}");
}

#[test]
fn non_loopback_http_needs_a_token() {
    let f = Fixture::new();
    let out = std::process::Command::new(sbx_bin())
        .args(f.args(&["--http", "0.0.0.0:0"]))
        .envs(f.env())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bearer token is required"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_cancels_a_running_call_and_keeps_its_audit() {
    let f = Fixture::new();
    let token = "correct-horse-battery-staple";
    std::fs::write(f.path("token"), token).unwrap();
    let token_file = f.path("token").display().to_string();
    let mut server = f.http(&["--token-file", &token_file, "--shutdown-grace-ms", "300"]);
    let s = http(&server.url, token).await;
    let spin = tokio::spawn(async move {
        let args = json!({"code": FOREVER});
        let args = args.as_object().unwrap().clone();
        let r = s
            .call_tool(CallToolRequestParams::new("run_python").with_arguments(args))
            .await;
        (s, r)
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let started = Instant::now();
    assert_eq!(server.terminate(), Some(0));
    // Grace (0.3 s), then the cancel: well before the run's 20 s wall.
    assert!(started.elapsed() < Duration::from_secs(10));
    let ends = f.ends();
    let end = ends
        .iter()
        .find(|e| e["tool"] == "run_python")
        .expect("the running call's end record");
    assert_eq!(end["end"]["status"], "cancelled", "{ends:?}");
    assert!(end["end"]["usage"]["wall_ms"].as_u64().unwrap() >= 1000);
    spin.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_key_value_store_is_its_own_and_outlives_its_calls() {
    let f = Fixture::new();
    // The fixture's grant, plus a store of at most two keys.
    let caps = std::fs::read_to_string(f.path("caps.toml")).unwrap();
    std::fs::write(f.path("caps.toml"), format!("{caps}[kv]\nmax_keys = 2\n")).unwrap();
    std::fs::write(f.path("token"), "kv-token-of-sixteen-chars").unwrap();
    let token_file = f.path("token").display().to_string();
    let mut server = f.http(&["--token-file", &token_file]);
    let a = http(&server.url, "kv-token-of-sixteen-chars").await;
    let b = http(&server.url, "kv-token-of-sixteen-chars").await;
    let listed = tool_names(&a).await;
    for tool in ["kv_get", "kv_put", "kv_delete", "kv_list"] {
        assert!(listed.iter().any(|n| n == tool), "{tool} in {listed:?}");
    }
    let r = call(&a, "kv_put", json!({"key": "q3", "value": "42"})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    // The next call of the session sees it, a run of Python too.
    let r = call(&a, "kv_get", json!({"key": "q3"})).await;
    assert_eq!(text(&r), "42");
    let r = call(
        &a,
        "run_python",
        json!({"code": "import sbx\nprint(sbx.kv_get('q3').decode())\nsbx.kv_put('from_py', 'x')\nprint(sbx.kv_list())"}),
    )
    .await;
    assert_eq!(
        field(&r, "stdout"),
        "42\n['from_py', 'q3']\n",
        "{}",
        text(&r)
    );
    // A third key is over max_keys: refused, nothing stored.
    let r = call(&a, "kv_put", json!({"key": "third", "value": "x"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(field(&r, "violation"), "kv_denied");
    // Another session has a store of its own.
    let r = call(&b, "kv_get", json!({"key": "q3"})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let r = call(&b, "kv_list", json!({})).await;
    assert!(!text(&r).contains("q3"), "{}", text(&r));
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    assert_eq!(server.terminate(), Some(0));
}
