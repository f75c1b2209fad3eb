//! The JSON API the test server answers under `/api/` (what an agent's
//! script calls with urllib, http.client or requests): a fixed item list,
//! an echo of the request, a cookie, a redirect and an error.

/// What the server sends back: status line, extra header lines, body.
pub(crate) struct Answer {
    pub(crate) status: &'static str,
    pub(crate) headers: String,
    pub(crate) body: Vec<u8>,
}

fn json(status: &'static str, value: &serde_json::Value) -> Answer {
    Answer {
        status,
        headers: "content-type: application/json\r\n".to_string(),
        body: value.to_string().into_bytes(),
    }
}

/// The answer to `method path` with request `headers` (`name: value`
/// lines) and `body`.
pub(crate) fn answer(method: &str, path: &str, headers: &[String], body: &[u8]) -> Answer {
    let header = |name: &str| {
        headers.iter().find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    match route {
        "/api/items" => json(
            "200 OK",
            &serde_json::json!({"items": [
                {"id": 1, "name": "alpha", "price": 3.5, "tags": ["a", "x"]},
                {"id": 2, "name": "beta", "price": 7.25, "tags": ["b"]},
                {"id": 3, "name": "gamma", "price": 1.0, "tags": ["a", "c"]},
            ]}),
        ),
        "/api/echo" => json(
            "200 OK",
            &serde_json::json!({
                "method": method,
                "query": query,
                "content_type": header("content-type"),
                "authorization": header("authorization"),
                "body": String::from_utf8_lossy(body),
            }),
        ),
        "/api/cookie" => Answer {
            status: "200 OK",
            headers: "set-cookie: session=abc123; Path=/\r\n".to_string(),
            body: b"cookie set".to_vec(),
        },
        "/api/whoami" => json("200 OK", &serde_json::json!({"cookie": header("cookie")})),
        "/api/moved" => Answer {
            status: "302 Found",
            headers: "location: /api/items\r\n".to_string(),
            body: Vec::new(),
        },
        _ => json(
            "404 Not Found",
            &serde_json::json!({"error": "no such resource", "path": route}),
        ),
    }
}
