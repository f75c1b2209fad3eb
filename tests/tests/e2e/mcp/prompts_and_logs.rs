//! The `code_mode` prompt, log messages, resources and their
//! subscriptions, through the Rust SDK's client over stdio.

use super::Fixture;
use super::rust_client::{Client, field, stdio};
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use sbx_wasm_tests::sbx_bin;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client that keeps every log message: level, logger, data.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<(String, String, Value)>>>);

#[allow(deprecated)] // MCP logging: part of the revisions before 2026-07-28
impl ClientHandler for Logs {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap();
        self.0.lock().unwrap().push((
            level.as_str().unwrap_or("").to_string(),
            params.logger.unwrap_or_default(),
            params.data,
        ));
    }
}

impl Logs {
    /// The messages so far, once `n` have come (or 10 s have passed).
    async fn wait_for(&self, n: usize) -> Vec<(String, String, Value)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.0.lock().unwrap().len() < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread")]
#[allow(deprecated)] // MCP logging: part of the revisions before 2026-07-28
async fn log_messages_carry_stderr_and_denials_once_a_level_is_set() {
    let f = Fixture::new();
    let logs = Logs::default();
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(&[])).envs(f.env());
    });
    let s = logs
        .clone()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let script = json!({"code": "import sys\nprint('out')\nprint('to stderr', file=sys.stderr)\n\
        try:\n    open('/etc/passwd')\nexcept OSError:\n    pass"});
    let call_it = |s: &RunningService<RoleClient, Logs>| {
        let args = script.as_object().unwrap().clone();
        let req = CallToolRequestParams::new("run_python").with_arguments(args);
        let peer = s.peer().clone();
        async move { peer.call_tool(req).await.unwrap() }
    };
    // The neighbour: no level set, no log messages (the run still works).
    let r = call_it(&s).await;
    assert_eq!(field(&r, "stdout"), "out\n");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(logs.0.lock().unwrap().is_empty());
    let level = rmcp::model::SetLevelRequestParams::new;
    // At info: the stderr text (in the pieces it was written in) and the
    // denial (notifications may be handled out of order).
    s.set_level(level(rmcp::model::LoggingLevel::Info))
        .await
        .unwrap();
    call_it(&s).await;
    let stderr = |got: &[(String, String, Value)]| -> String {
        (got.iter())
            .filter(|(l, logger, _)| l == "info" && logger == "stderr")
            .filter_map(|(_, _, d)| d.as_str())
            .collect()
    };
    let denials = |got: &[(String, String, Value)]| -> Vec<Value> {
        (got.iter())
            .filter(|(l, logger, _)| l == "warning" && logger == "sbx")
            .map(|(_, _, d)| d.clone())
            .collect()
    };
    // The pieces may be handled in any order ("\n" before "to stderr"):
    // their characters, sorted, are the line's.
    let sorted = |s: &str| -> Vec<char> {
        let mut c: Vec<char> = s.chars().collect();
        c.sort_unstable();
        c
    };
    let want = sorted("to stderr\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while Instant::now() < deadline && (sorted(&stderr(&got)) != want || denials(&got).is_empty()) {
        got = logs.wait_for(got.len() + 1).await;
    }
    assert_eq!(sorted(&stderr(&got)), want, "{got:?}");
    let denied = denials(&got);
    assert_eq!(denied.len(), 1, "{got:?}");
    assert_eq!(denied[0]["violation"], "fs_read_denied");
    assert_eq!(denied[0]["target"], "/etc/passwd");
    // At warning: only the denial.
    s.set_level(level(rmcp::model::LoggingLevel::Warning))
        .await
        .unwrap();
    let before = got.len();
    call_it(&s).await;
    logs.wait_for(before + 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = &logs.0.lock().unwrap().clone()[before..];
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "warning");
    s.cancel().await.unwrap();
}

/// The sessionless revision's opt-in: a request whose `_meta` names a log
/// level gets the run's log messages in its own answer stream; its
/// neighbour without one gets none.
#[test]
fn a_sessionless_request_names_its_log_level_in_its_meta() {
    let f = Fixture::new();
    let server = f.http(&[]);
    let code = "import sys\nprint('to stderr', file=sys.stderr)\ntry:\n    open('/etc/passwd')\nexcept OSError:\n    pass";
    let call = || json!({ "name": "run_python", "arguments": { "code": code } });
    let logs = |level: Option<&str>| -> Vec<Value> {
        let got = super::sessionless_post(&server, None, "tools/call", call(), json!({}), level);
        let (last, notes) = got.split_last().unwrap();
        assert_eq!(
            last["result"]["structuredContent"]["stderr"], "to stderr\n",
            "{got:?}"
        );
        (notes.iter())
            .filter(|n| n["method"] == "notifications/message")
            .map(|n| n["params"].clone())
            .collect()
    };
    assert!(logs(None).is_empty());
    let info = logs(Some("info"));
    let levels: Vec<&str> = info.iter().filter_map(|p| p["level"].as_str()).collect();
    assert!(
        levels.contains(&"info") && levels.contains(&"warning"),
        "{info:?}"
    );
    let warning = logs(Some("warning"));
    assert!(
        warning.iter().all(|p| p["level"] == "warning") && !warning.is_empty(),
        "{warning:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_code_mode_prompt_hands_over_the_grant_by_guest_paths() {
    let f = Fixture::new();
    let s = stdio(&f, &[], Client::default()).await;
    let listed = s.list_all_prompts().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["code_mode", "code_mode_ts"]);
    let task = "Sum the values in /work/data.csv";
    let mut args = serde_json::Map::new();
    args.insert("task".into(), json!(task));
    let got = s
        .get_prompt(rmcp::model::GetPromptRequestParams::new("code_mode").with_arguments(args))
        .await
        .unwrap();
    let text: String = got
        .messages
        .iter()
        .filter_map(|m| match &m.content {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    for part in [
        "run_python",
        "Read files under: /work.",
        "/work/out, /scratch",
        &f.granted.origin(),
        "word_count: Count the words of a text.",
        "sbx.Denied",
        task,
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    // Never where the grant's folders are on the host.
    let host = f.dir.path().display().to_string();
    assert!(!text.contains(&host), "{text}");
    // Without its argument, or by another name: invalid params.
    for req in [
        rmcp::model::GetPromptRequestParams::new("code_mode"),
        rmcp::model::GetPromptRequestParams::new("no_such_prompt"),
    ] {
        let err = s.get_prompt(req).await.unwrap_err();
        assert!(format!("{err:?}").contains("-32602"), "{err:?}");
    }
    s.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_are_the_grants_files_by_guest_path_read_through_the_gate() {
    let f = Fixture::new();
    std::fs::write(f.path("data/blob.bin"), [0u8, 159, 146, 150]).unwrap();
    let before = f.host_state();
    let s = stdio(&f, &[], Client::default()).await;
    // A file in the session's /scratch is listed too.
    let r = s
        .call_tool(
            CallToolRequestParams::new("run_python").with_arguments(
                json!({"code": "open('/scratch/notes.txt', 'w').write('kept')"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let listed = s.list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    for u in [
        "sbx://work/a.txt",
        "sbx://work/data.csv",
        "sbx://work/blob.bin",
        "sbx://scratch/notes.txt",
    ] {
        assert!(uris.contains(&u), "{u} not in {uris:?}");
    }
    let host = f.dir.path().display().to_string();
    assert!(!format!("{listed:?}").contains(&host), "{listed:?}");
    let templates = s.list_all_resource_templates().await.unwrap();
    let names: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert!(names.contains(&"sbx://work/{+path}"), "{names:?}");
    assert!(names.contains(&"sbx://work/out/{+path}"), "{names:?}");

    let read = |uri: &str| {
        let peer = s.peer().clone();
        let req = rmcp::model::ReadResourceRequestParams::new(uri);
        async move { peer.read_resource(req).await }
    };
    let text = |r: &rmcp::model::ReadResourceResult| match &r.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    };
    // The allowed neighbours: text, and bytes that are not UTF-8.
    assert_eq!(text(&read("sbx://work/a.txt").await.unwrap()), "hello mcp");
    assert_eq!(
        text(&read("sbx://scratch/notes.txt").await.unwrap()),
        "kept"
    );
    match &read("sbx://work/blob.bin").await.unwrap().contents[0] {
        rmcp::model::ResourceContents::BlobResourceContents { blob, .. } => {
            assert_eq!(blob, "AJ+Slg==")
        }
        other => panic!("not a blob: {other:?}"),
    }
    // Outside the grant, above a mount, not there, not ours.
    for (uri, want) in [
        ("sbx://etc/passwd", "-32602"),
        ("sbx://work/../canary.txt", "-32602"),
        ("sbx://work/no-such.txt", "-32002"),
        ("file:///etc/passwd", "-32602"),
    ] {
        let err = format!("{:?}", read(uri).await.unwrap_err());
        assert!(err.contains(want), "{uri}: {err}");
        assert!(!err.contains("CANARY") && !err.contains("root:"), "{err}");
    }
    s.cancel().await.unwrap();
    assert_eq!(f.host_state(), before, "the host changed");
    // Every read is on record, the refused ones with their violation.
    let audit = f.audit();
    let reads: Vec<&Value> = (audit.iter())
        .filter(|v| v["tool"] == "resources/read" && v.get("end").is_none())
        .collect();
    assert!(
        reads.iter().any(|v| v["violation"] == "fs_read_denied"),
        "{reads:?}"
    );
    assert!(reads.len() >= 6, "{reads:?}");
}

/// A client that keeps the URI of every resource-updated notice.
#[derive(Clone, Default)]
struct Notices(Arc<Mutex<Vec<String>>>);

impl ClientHandler for Notices {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.uri);
    }
}

#[tokio::test(flavor = "multi_thread")]
#[allow(deprecated)] // resources/subscribe: the revisions before 2026-07-28
async fn a_subscribed_file_a_run_writes_is_noticed_and_others_are_not() {
    let f = Fixture::new();
    let notices = Notices::default();
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(&[])).envs(f.env());
    });
    let s = notices
        .clone()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let sub = |uri: &str| {
        let peer = s.peer().clone();
        let req = rmcp::model::SubscribeRequestParams::new(uri);
        async move { peer.subscribe(req).await }
    };
    sub("sbx://work/out/r.txt").await.unwrap();
    // Outside the grant, or climbing out of it: refused.
    for uri in ["sbx://etc/passwd", "sbx://work/out/../../etc/passwd"] {
        let err = format!("{:?}", sub(uri).await.unwrap_err());
        assert!(err.contains("-32602"), "{uri}: {err}");
    }
    let run = |code: &str| {
        let peer = s.peer().clone();
        let args = json!({ "code": code }).as_object().unwrap().clone();
        async move {
            peer.call_tool(CallToolRequestParams::new("run_python").with_arguments(args))
                .await
                .unwrap()
        }
    };
    let r =
        run("open('/work/out/r.txt', 'w').write('1')\nopen('/work/out/other.txt', 'w').write('2')")
            .await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while notices.0.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*notices.0.lock().unwrap(), ["sbx://work/out/r.txt"]);
    // Unsubscribed: a write is no longer noticed.
    s.peer()
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(
            "sbx://work/out/r.txt",
        ))
        .await
        .unwrap();
    run("open('/work/out/r.txt', 'w').write('3')").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(notices.0.lock().unwrap().len(), 1);
    s.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_files_a_run_wrote_are_linked_and_its_images_sent_as_images() {
    let f = Fixture::new();
    let s = stdio(&f, &[], Client::default()).await;
    let code = "open('/work/out/chart.png', 'wb').write(bytes([137, 80, 78, 71, 1, 2]))\n\
                open('/work/out/big.png', 'wb').write(b'x' * (2 << 20))\n\
                open('/work/out/notes.txt', 'w').write('n')\n\
                import os\n\
                open('/work/out/gone.txt', 'w').write('g')\n\
                os.remove('/work/out/gone.txt')\n\
                print('ok')";
    let args = json!({ "code": code }).as_object().unwrap().clone();
    let r = s
        .call_tool(CallToolRequestParams::new("run_python").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(field(&r, "stdout"), "ok\n", "{r:?}");
    assert_eq!(
        field(&r, "files"),
        &json!([
            "sbx://work/out/chart.png",
            "sbx://work/out/big.png",
            "sbx://work/out/notes.txt"
        ])
    );
    let links: Vec<&str> = (r.content.iter())
        .filter_map(|c| match c {
            ContentBlock::ResourceLink(l) => Some(l.uri.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(links.len(), 3, "{links:?}");
    // The small image inline; the one over 1 MiB only linked.
    let images: Vec<(&str, &str)> = (r.content.iter())
        .filter_map(|c| match c {
            ContentBlock::Image(i) => Some((i.data.as_str(), i.mime_type.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(images, [("iVBORwEC", "image/png")]);
    // The images were read back through the gate, on record.
    let reads: Vec<Value> = (f.audit().into_iter())
        .filter(|v| v["tool"] == "run_python files" && v["op"] == "fs_read")
        .collect();
    assert_eq!(reads.len(), 2, "{reads:?}");
    // A run that writes nothing answers with its text alone.
    let args = json!({ "code": "print(1)" }).as_object().unwrap().clone();
    let r = s
        .call_tool(CallToolRequestParams::new("run_python").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(r.content.len(), 1, "{r:?}");
    s.cancel().await.unwrap();
}
