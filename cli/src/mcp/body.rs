//! A POST body over HTTP, read whole (within `--max-request-bytes`) before
//! rmcp's service sees it, for two answers rmcp gives badly:
//!
//! - **Over the limit** (413): the rest of the body is read and dropped, up
//!   to [`DRAIN_BYTES`] or [`DRAIN_TIME`], before the answer. Closing a
//!   connection with unread bytes in it resets it, and a client still
//!   sending would never read its 413.
//! - **Not a JSON-RPC message**: 400 with a JSON-RPC error whose id is null
//!   (or the message's own, when it has a usable one): -32700 when the body
//!   is not JSON, -32600 when it is JSON of the wrong shape, a batch
//!   included (no revision this server speaks has batches).
//!
//! A body that passes goes on to rmcp unchanged.

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Response, StatusCode};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::time::Duration;

/// The most an over-size body is read past the limit before the answer.
const DRAIN_BYTES: u64 = 64 * 1024 * 1024;
/// How long an over-size body is read before the answer.
const DRAIN_TIME: Duration = Duration::from_secs(5);
/// The longest id echoed in an error (a longer one is answered with null).
const ID_CHARS: usize = 256;

/// An answer of the HTTP transport.
pub(crate) type Reply = Response<BoxBody<Bytes, Infallible>>;

/// The whole body, or the answer when it is over `max` bytes or cannot be
/// read.
pub(crate) async fn whole(
    mut body: Incoming,
    declared: Option<u64>,
    max: usize,
) -> Result<Bytes, Reply> {
    let mut got = BytesMut::new();
    let mut over = declared.is_some_and(|n| n > max as u64);
    let mut dropped: u64 = 0;
    let drain_until = tokio::time::Instant::now() + DRAIN_TIME;
    loop {
        let next = if over {
            match tokio::time::timeout_at(drain_until, body.frame()).await {
                Ok(next) => next,
                Err(_) => break,
            }
        } else {
            body.frame().await
        };
        let frame = match next {
            None => break,
            Some(Ok(frame)) => frame,
            Some(Err(_)) => {
                return Err(text(
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read",
                ));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if !over && got.len() + data.len() <= max {
            got.extend_from_slice(&data);
            continue;
        }
        over = true;
        dropped += (got.len() + data.len()) as u64;
        got = BytesMut::new();
        if dropped > DRAIN_BYTES {
            break;
        }
    }
    if over {
        let mut r = text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is over {max} bytes (--max-request-bytes)"),
        );
        r.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        return Err(r);
    }
    Ok(got.freeze())
}

/// The fields a JSON-RPC message is told by (the rest is skipped, not
/// kept).
#[derive(Deserialize)]
struct Shape {
    jsonrpc: Option<String>,
    method: Option<Value>,
    id: Option<Value>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// The answer when `body` is not one JSON-RPC 2.0 message (a request, a
/// notification or a response); `None` when it is.
pub(crate) fn not_one_message(body: &[u8]) -> Option<Reply> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return Some(rpc_error(
            Value::Null,
            -32600,
            "batches are not accepted: no protocol revision this server speaks has them",
        ));
    }
    let shape: Shape = match serde_json::from_slice(body) {
        Ok(s) => s,
        Err(e) if e.is_data() => {
            return Some(rpc_error(
                Value::Null,
                -32600,
                "not a JSON-RPC 2.0 message: an object with \"jsonrpc\": \"2.0\" and a method, result or error",
            ));
        }
        Err(e) => {
            return Some(rpc_error(
                Value::Null,
                -32700,
                &format!("parse error: the body is not JSON ({e})"),
            ));
        }
    };
    let id = match shape.id {
        Some(id @ Value::Number(_)) => id,
        Some(Value::String(s)) if s.chars().count() <= ID_CHARS => Value::String(s),
        _ => Value::Null,
    };
    if shape.jsonrpc.as_deref() != Some("2.0") {
        return Some(rpc_error(
            id,
            -32600,
            "not a JSON-RPC 2.0 message: \"jsonrpc\" must be \"2.0\"",
        ));
    }
    let method = matches!(shape.method, Some(Value::String(_)));
    if !method && shape.result.is_none() && shape.error.is_none() {
        return Some(rpc_error(
            id,
            -32600,
            "not a JSON-RPC 2.0 message: it has no method (a string), result or error",
        ));
    }
    None
}

fn rpc_error(id: Value, code: i64, message: &str) -> Reply {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = StatusCode::BAD_REQUEST;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn text(status: StatusCode, message: &str) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from(message.to_string())).boxed());
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<(i64, Value)> {
        let r = not_one_message(body.as_bytes())?;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        let bytes = collected(r);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        Some((v["error"]["code"].as_i64().unwrap(), v["id"].clone()))
    }

    fn collected(r: Reply) -> Bytes {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async { r.into_body().collect().await.unwrap().to_bytes() })
    }

    #[test]
    fn messages_pass_and_the_rest_get_their_code() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"a":[1,2]}}"#,
            r#"{"jsonrpc":"2.0","id":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}"#,
        ] {
            assert!(not_one_message(ok.as_bytes()).is_none(), "{ok}");
        }
        assert_eq!(code("{not json"), Some((-32700, Value::Null)));
        assert_eq!(code(""), Some((-32700, Value::Null)));
        assert_eq!(code(" [ {} ]"), Some((-32600, Value::Null)));
        assert_eq!(code("{}"), Some((-32600, Value::Null)));
        assert_eq!(code("42"), Some((-32600, Value::Null)));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#),
            Some((-32600, json!(3)))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"a","method":5}"#),
            Some((-32600, json!("a")))
        );
        // An id too long to echo is answered with null.
        let long = format!(r#"{{"jsonrpc":"2.0","id":"{}"}}"#, "i".repeat(300));
        assert_eq!(code(&long), Some((-32600, Value::Null)));
    }
}
