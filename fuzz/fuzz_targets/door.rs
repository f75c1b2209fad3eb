//! The MCP door's edges on hostile bytes: a POST body (is it one JSON-RPC
//! message?), the `Origin` and `Host` headers, a resource URI. The door's
//! own files are included as they are (they name nothing outside
//! themselves), so what runs is what the server runs.
//!
//! Oracles: nothing panics; a body let through is JSON whose top is an
//! object; a body turned away gets a 400 whose JSON-RPC error is -32700 or
//! -32600 with an id that is null, a number or a short string; with no
//! origin listed every `Origin` is refused; a URI the door decodes names a
//! guest path (from `/`, no NUL) that encodes back to the same URI's path;
//! every path encodes to a URI that decodes to it, slashes collapsed.
#![no_main]

#[allow(dead_code)]
#[path = "../../cli/src/mcp/body.rs"]
mod body;
#[allow(dead_code)]
#[path = "../../cli/src/mcp/browser.rs"]
mod browser;
#[allow(dead_code)]
#[path = "../../cli/src/mcp/uris.rs"]
mod uris;

use arbitrary::Arbitrary;
use http_body_util::BodyExt;
use hyper::header::{HOST, HeaderValue, ORIGIN};
use libfuzzer_sys::fuzz_target;
use std::future::Future;
use std::task::{Context, Poll, Waker};

#[derive(Arbitrary, Debug)]
struct Input {
    body: Vec<u8>,
    origin: Vec<u8>,
    host: Vec<u8>,
    uri: String,
    path: String,
}

/// A reply's whole body (the door's replies are in memory: ready at once).
fn bytes_of(r: body::Reply) -> Vec<u8> {
    let mut collecting = std::pin::pin!(r.into_body().collect());
    match collecting
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(c)) => c.to_bytes().to_vec(),
        _ => panic!("a reply body that is not ready"),
    }
}

fuzz_target!(|i: Input| {
    match body::not_one_message(&i.body) {
        None => {
            let first = i.body.iter().find(|b| !b.is_ascii_whitespace());
            assert_eq!(first, Some(&b'{'));
            assert!(serde_json::from_slice::<serde::de::IgnoredAny>(&i.body).is_ok());
        }
        Some(reply) => {
            assert_eq!(reply.status(), hyper::StatusCode::BAD_REQUEST);
            let v: serde_json::Value = serde_json::from_slice(&bytes_of(reply)).unwrap();
            let code = v["error"]["code"].as_i64().unwrap();
            assert!(code == -32700 || code == -32600, "{v}");
            match &v["id"] {
                serde_json::Value::Null | serde_json::Value::Number(_) => {}
                serde_json::Value::String(s) => assert!(s.chars().count() <= 256),
                other => panic!("an id of {other}"),
            }
        }
    }

    let mut headers = hyper::HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(&i.origin) {
        headers.insert(ORIGIN, v);
    }
    if let Ok(v) = HeaderValue::from_bytes(&i.host) {
        headers.insert(HOST, v);
    }
    let closed = browser::Browser {
        origins: Vec::new(),
        hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
    };
    let refused = closed.refuses(&headers);
    if headers.contains_key(ORIGIN) {
        assert!(refused.is_some());
    }
    let open = browser::Browser {
        origins: vec!["http://localhost:*".into(), "https://app.example".into()],
        hosts: Vec::new(),
    };
    let _ = open.refuses(&headers);

    if let Ok(path) = uris::guest_path(&i.uri) {
        assert!(path.starts_with('/') && !path.contains('\0'), "{path:?}");
        assert_eq!(uris::guest_path(&uris::uri(&path)).unwrap(), path);
    }
    if !i.path.contains('\0') {
        let segments: Vec<&str> = i.path.split('/').filter(|s| !s.is_empty()).collect();
        let collapsed = format!("/{}", segments.join("/"));
        assert_eq!(uris::guest_path(&uris::uri(&i.path)).unwrap(), collapsed);
    }
});
