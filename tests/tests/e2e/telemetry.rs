//! OpenTelemetry export (the `otel` feature) to a real OTLP http/protobuf
//! collector on 127.0.0.1, decoded with the protocol's own message types:
//! `exec` sends a run span with a span per decision and the run's metrics;
//! the MCP door sends a `tools/call` span under the client's trace context,
//! its status following `isError`. Without an endpoint nothing is sent.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use sbx_wasm_tests::{mount_caps, mount_tree, sbx_bin, utf8};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// What the collector received.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    metrics: Vec<String>,
    posts: usize,
}

/// An OTLP http/protobuf collector: `/v1/traces` and `/v1/metrics`.
struct Collector {
    port: u16,
    got: Arc<Mutex<Received>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Received::default()));
        let g = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let g = g.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                        let mut len = 0usize;
                        loop {
                            let mut h = String::new();
                            if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                                break;
                            }
                            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:")
                            {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0; len];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let mut r = g.lock().unwrap();
                        r.posts += 1;
                        if path == "/v1/traces" {
                            let req = ExportTraceServiceRequest::decode(&body[..]).unwrap();
                            for rs in req.resource_spans {
                                for ss in rs.scope_spans {
                                    r.spans.extend(ss.spans);
                                }
                            }
                        } else if path == "/v1/metrics" {
                            let req = ExportMetricsServiceRequest::decode(&body[..]).unwrap();
                            for rm in req.resource_metrics {
                                for sm in rm.scope_metrics {
                                    r.metrics.extend(sm.metrics.into_iter().map(|m| m.name));
                                }
                            }
                        }
                        drop(r);
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                        );
                    }
                });
            }
        });
        Collector { port, got }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A span's string attribute.
fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            Any::IntValue(i) => Some(i.to_string()),
            _ => None,
        })
}

const PLAN: &str = r#"[
  {"op": "fs_read", "path": "/work/a.txt"},
  {"op": "fs_read", "path": "/etc/passwd"},
  {"op": "fs_write", "path": "/work/out/r.txt", "content": "done"}
]"#;

#[test]
fn exec_sends_a_run_span_a_span_per_decision_and_the_runs_metrics() {
    let collector = Collector::start();
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", &mount_caps(""))]);
    std::fs::write(t.path().join("plan.json"), PLAN).unwrap();
    let exec = |env: Option<&str>| {
        let mut cmd = std::process::Command::new(sbx_bin());
        cmd.current_dir(t.path())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .args(["exec", "--caps", "caps.toml", "plan.json"]);
        if let Some(e) = env {
            cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", e);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    };
    // The neighbour: no endpoint, nothing sent.
    exec(None);
    assert_eq!(collector.got.lock().unwrap().posts, 0);
    exec(Some(&collector.endpoint()));
    let got = collector.got.lock().unwrap();
    let names: Vec<&str> = got.spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names.iter().filter(|n| n.starts_with("sbx.op ")).count(),
        3,
        "{names:?}"
    );
    let run = got
        .spans
        .iter()
        .find(|s| s.name == "sbx.run")
        .expect("a run span");
    assert_eq!(attr(run, "sbx.kind").as_deref(), Some("exec"));
    assert_eq!(attr(run, "sbx.denials").as_deref(), Some("1"));
    let denied = got
        .spans
        .iter()
        .find(|s| attr(s, "sbx.decision").as_deref() == Some("denied"))
        .expect("the denied read's span");
    assert_eq!(
        attr(denied, "sbx.violation").as_deref(),
        Some("fs_read_denied")
    );
    assert_eq!(denied.parent_span_id, run.span_id, "a child of the run");
    assert_eq!(denied.trace_id, run.trace_id);
    let allowed = got
        .spans
        .iter()
        .find(|s| attr(s, "sbx.op").as_deref() == Some("fs_write"))
        .unwrap();
    assert!(
        attr(allowed, "sbx.rule")
            .unwrap()
            .starts_with("write mount /work/out")
    );
    for m in ["sbx.runs", "sbx.denials", "sbx.run.duration"] {
        assert!(
            got.metrics.iter().any(|n| n == m),
            "{m} in {:?}",
            got.metrics
        );
    }
    drop(got);

    // `run` behind the kernel wall: its helper sends the spans.
    let out = std::process::Command::new(sbx_bin())
        .current_dir(t.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args(["run", "--caps", "caps.toml"])
        .arg(sbx_wasm_tests::guest("exfil"))
        .args(["--", "read:/work/a.txt", "read:/etc/passwd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    let got = collector.got.lock().unwrap();
    let run = got
        .spans
        .iter()
        .find(|s| s.name == "sbx.run" && attr(s, "sbx.kind").as_deref() == Some("run"))
        .expect("the run's span, sent by its helper");
    assert_eq!(attr(run, "sbx.program").as_deref(), Some("exfil.wasm"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_door_sends_a_call_span_under_the_clients_trace() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let collector = Collector::start();
    let t = mount_tree(&[("data/a.txt", "hello"), ("caps.toml", &mount_caps(""))]);
    let endpoint = collector.endpoint();
    let caps = t.path().join("caps.toml");
    let log = t.path().join("server.log");
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(["mcp", "--caps", caps.to_str().unwrap(), "--log"])
            .arg(log.to_str().unwrap())
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    });
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let call = |path: &str| {
        let mut map = serde_json::Map::new();
        map.insert(
            "traceparent".into(),
            serde_json::json!(format!("00-{trace}-00f067aa0ba902b7-01")),
        );
        let meta = RequestMetaObject(MetaObject(map));
        let args = serde_json::json!({ "path": path })
            .as_object()
            .unwrap()
            .clone();
        let mut p = CallToolRequestParams::new("read_file").with_arguments(args);
        p.meta = Some(meta);
        p
    };
    let ok = client.call_tool(call("/work/a.txt")).await.unwrap();
    assert_ne!(ok.is_error, Some(true));
    let refused = client.call_tool(call("/etc/passwd")).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    client.cancel().await.unwrap();
    // The spans are sent as each call ends.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let n = collector
            .got
            .lock()
            .unwrap()
            .spans
            .iter()
            .filter(|s| s.name == "tools/call read_file")
            .count();
        if n == 2 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let got = collector.got.lock().unwrap();
    let calls: Vec<&Span> = got
        .spans
        .iter()
        .filter(|s| s.name == "tools/call read_file")
        .collect();
    assert_eq!(
        calls.len(),
        2,
        "{:?}",
        got.spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    for c in &calls {
        assert_eq!(hex(&c.trace_id), trace, "under the client's trace");
        assert_eq!(attr(c, "mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(attr(c, "gen_ai.tool.name").as_deref(), Some("read_file"));
    }
    let errors = calls
        .iter()
        .filter(|c| c.status.as_ref().is_some_and(|s| s.code == 2))
        .count();
    assert_eq!(errors, 1, "the refused call's span is an error");
    // Each call's run and decision hang under its call span.
    let runs = got.spans.iter().filter(|s| s.name == "sbx.run").count();
    assert_eq!(runs, 2);
    assert!(
        got.spans
            .iter()
            .filter(|s| s.name == "sbx.run")
            .all(|r| calls.iter().any(|c| c.span_id == r.parent_span_id))
    );
}
