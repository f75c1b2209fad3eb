//! The door's metrics (`GET /metrics`, Prometheus text) through real
//! calls over HTTP.

use super::Fixture;
use super::rust_client::{call, field, http};
use serde_json::json;

/// The value of the metric `name` in `text`.
pub(super) fn metric(text: &str, name: &str) -> u64 {
    (text.lines())
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .parse()
        .unwrap()
}

/// A call counts once in the metrics, also one whose answer reads back
/// the image it wrote.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_each_call_once() {
    let f = Fixture::new();
    let token = "metrics-token-of-16-chars";
    std::fs::write(f.path("token"), token).unwrap();
    let token_file = f.path("token").display().to_string();
    let mut server = f.http(&["--token-file", &token_file]);
    let s = http(&server.url, token).await;
    let r = call(
        &s,
        "run_python",
        json!({"code": "open('/work/out/c.png', 'wb').write(b'png')"}),
    )
    .await;
    assert_eq!(field(&r, "files"), &json!(["sbx://work/out/c.png"]));
    call(&s, "read_file", json!({"path": "/work/a.txt"})).await;
    let auth = format!("Bearer {token}");
    let (_, text) = server.reply_of("GET", "/metrics", &[("Authorization", &auth)], b"");
    assert_eq!(metric(&text, "sbx_mcp_calls_ran_total"), 2, "{text}");
    assert_eq!(
        metric(&text, "sbx_mcp_calls_turned_away_total"),
        0,
        "{text}"
    );
    s.cancel().await.unwrap();
    assert_eq!(server.terminate(), Some(0));
}
