//! The door's protocol at its edges, with raw JSON-RPC lines (stdio) and
//! raw HTTP requests: what is not a message, bodies over the limit, params
//! of the wrong form, sessions past the most, ending a session.

use super::{Fixture, INITIALIZE};
use sbx_wasm_tests::sbx_bin;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A stdio server for `f`, its handshake done: the child, its stdin and
/// its stdout's lines.
fn shaken_hands(f: &Fixture) -> (Child, ChildStdin, std::io::Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(sbx_bin())
        .args(f.args(&[]))
        .envs(f.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    writeln!(stdin, "{INITIALIZE}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    (child, stdin, lines)
}

#[test]
fn sessions_past_max_are_503_with_retry_after_and_ending_one_is_204_then_404() {
    let f = Fixture::new();
    let server = f.http(&["--max-sessions", "1"]);
    // The allowed neighbour: the first session opens.
    let first = server.head_of("POST", &[], INITIALIZE);
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let id = first
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .expect("a session id");
    // A workspace counts as one too: refused as busy.
    let workspace = server.reply_of("POST", "/mcp/workspaces", &[], b"").0;
    assert!(workspace.starts_with("HTTP/1.1 503"), "{workspace}");
    // A second is refused as busy, with a time to come back.
    let second = server.head_of("POST", &[], INITIALIZE);
    assert!(second.starts_with("HTTP/1.1 503"), "{second}");
    assert!(
        second.to_ascii_lowercase().contains("retry-after: 5"),
        "{second}"
    );
    // The open session is still served.
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let session = [
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    assert_eq!(server.status_of("POST", &session, initialized), 202);
    // Ending it is 204; ending it again, or a session never opened, is 404.
    assert_eq!(server.status_of("DELETE", &session, ""), 204);
    assert_eq!(server.status_of("DELETE", &session, ""), 404);
    let unknown = [
        ("Mcp-Session-Id", "no-such"),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    assert_eq!(server.status_of("DELETE", &unknown, ""), 404);
    // Its place is free again: a new session opens.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let status = server.status_of("POST", &[], INITIALIZE);
        if status == 200 || std::time::Instant::now() > deadline {
            assert_eq!(status, 200);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_known_method_with_bad_params_is_invalid_params_and_an_unknown_one_not_found() {
    let f = Fixture::new();
    let (mut child, mut stdin, mut lines) = shaken_hands(&f);
    let mut send = |line: &str| writeln!(stdin, "{line}").unwrap();
    // The allowed neighbour: a well-formed call.
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    // tools/call without a name; then a method no one serves.
    send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#);
    send(r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method","params":{}}"#);
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 4 {
        let line = lines.next().expect("the server answered").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v["id"].as_i64() {
            answers.insert(id, v);
        }
    }
    assert!(answers[&2]["result"]["tools"].is_array(), "{}", answers[&2]);
    assert_eq!(answers[&3]["error"]["code"], -32602, "{}", answers[&3]);
    assert!(
        answers[&3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/call"),
        "{}",
        answers[&3]
    );
    assert_eq!(answers[&4]["error"]["code"], -32601, "{}", answers[&4]);
    drop(stdin);
    let _ = child.wait();
}

/// D5, D8, D6 over HTTP: what is not one JSON-RPC message is a JSON-RPC
/// error with id null (or its own), a body over the limit is a 413 the
/// client reads even while it is still sending, and a client asking for
/// 2025-03-26 (batches) is offered a revision the door speaks.
#[test]
fn bodies_that_are_not_one_message_or_are_too_big_get_answers_a_client_reads() {
    let f = Fixture::new();
    let server = f.http(&["--max-request-bytes", "65536"]);
    let error_of = |body: &[u8]| -> (String, Value) {
        let (head, text) = server.reply_of("POST", "/mcp", &[], body);
        let v = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
        (head, v)
    };
    for (body, code, id) in [
        (&b"{not json"[..], -32700, Value::Null),
        (b"", -32700, Value::Null),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            -32600,
            Value::Null,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":5}", -32600, Value::from(5)),
        (
            b"{\"id\":\"x\",\"method\":\"ping\"}",
            -32600,
            Value::from("x"),
        ),
    ] {
        let (head, v) = error_of(body);
        let shown = String::from_utf8_lossy(body);
        assert!(head.starts_with("HTTP/1.1 400"), "{shown}: {head}");
        assert_eq!(v["error"]["code"], code, "{shown}: {v}");
        assert_eq!(v["id"], id, "{shown}: {v}");
        assert_eq!(v["jsonrpc"], "2.0");
    }
    // 8 MiB against a 64 KiB limit: the whole body is sent, and the 413
    // is read after it (a reset connection would fail the write).
    let big = vec![b' '; 8 << 20];
    let (head, text) = server.reply_of("POST", "/mcp", &[], &big);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(text.contains("65536"), "{text}");
    // The allowed neighbours: a handshake at a revision the door speaks,
    // and one asking for 2025-03-26, offered 2025-11-25 instead.
    for (asked, offered) in [("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-11-25")] {
        let init = INITIALIZE.replace("2025-06-18", asked);
        let (head, text) = server.reply_of("POST", "/mcp", &[], init.as_bytes());
        assert!(head.starts_with("HTTP/1.1 200"), "{asked}: {head}");
        assert!(
            text.contains(&format!("\"protocolVersion\":\"{offered}\"")),
            "{asked}: {text}"
        );
    }
}

/// D5 over stdio: a line that is not JSON is ignored (as the official SDKs
/// do), JSON of the wrong shape is -32600, and the session goes on.
#[test]
fn stdio_lines_that_are_not_messages_leave_the_session_going() {
    let f = Fixture::new();
    let (mut child, mut stdin, mut lines) = shaken_hands(&f);
    let mut send = |line: &str| writeln!(stdin, "{line}").unwrap();
    send("{not json");
    send(r#"{"jsonrpc":"2.0","method":5}"#);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let mut seen = Vec::new();
    while !seen.iter().any(|v: &Value| v["id"] == 2) {
        let line = lines.next().expect("the server answered").unwrap();
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let invalid: Vec<&Value> = (seen.iter())
        .filter(|v| v["error"]["code"] == -32600)
        .collect();
    assert_eq!(invalid.len(), 1, "{seen:?}");
    assert!(
        seen.iter().all(|v| v["error"]["code"] != -32700),
        "{seen:?}"
    );
    let list = seen.iter().find(|v| v["id"] == 2).unwrap();
    assert!(list["result"]["tools"].is_array(), "{list}");
    drop(stdin);
    let _ = child.wait();
}

/// `--advertise-url`: each workspace issued names the URL its requests go
/// to (a replica's own address, past a load balancer); without it, none.
/// A URL that is not http(s) stops the start.
#[test]
fn an_issued_workspace_names_the_advertised_url_and_a_bad_one_stops_the_start() {
    let f = Fixture::new();
    let plain = f.http(&[]);
    let (_, body) = plain.reply_of("POST", "/mcp/workspaces", &[], b"");
    let issued: Value = serde_json::from_str(&body).unwrap();
    assert!(issued.get("url").is_none(), "{issued}");

    let advertised = f.http(&["--advertise-url", "http://10.0.0.7:8765/mcp"]);
    let (head, body) = advertised.reply_of("POST", "/mcp/workspaces", &[], b"");
    let issued: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(issued["url"], "http://10.0.0.7:8765/mcp", "{issued}");
    assert!(
        head.to_ascii_lowercase()
            .contains("sbx-workspace-url: http://10.0.0.7:8765/mcp"),
        "{head}"
    );

    for bad in ["ftp://10.0.0.7/mcp", "not a url", "http://"] {
        let mut child = Command::new(sbx_bin())
            .args(f.args(&["--http", "127.0.0.1:0", "--advertise-url", bad]))
            .envs(f.env())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A server that started anyway would never end: give it 30 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{bad}: the server started");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(!status.success(), "{bad}");
        let mut said = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
        assert!(said.contains("--advertise-url"), "{bad}: {said}");
    }
}
