//! Bounds on what a guest may send: header count and size, body size, and
//! headers it may never set (they would let it steer the connection, the
//! proxy or what a server believes about the client).

use crate::violation::{Denial, Violation};

/// Most request headers accepted.
pub const MAX_REQUEST_HEADERS: usize = 64;
/// Longest accepted header (name + value), in bytes.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// Largest accepted request body.
pub const MAX_REQUEST_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Largest accepted response header section (status line + headers).
pub const MAX_RESPONSE_HEADER_BYTES: usize = 64 * 1024;

/// Headers the host sets itself or that steer connections and proxies.
const FORBIDDEN: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "expect",
    "forwarded",
    "via",
];

/// Whether a header name is forbidden (including every `proxy-*` and
/// `x-forwarded-*` header).
pub fn forbidden_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    FORBIDDEN.contains(&n.as_str()) || n.starts_with("proxy-") || n.starts_with("x-forwarded-")
}

fn token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn invalid(msg: String) -> Denial {
    Denial::new(Violation::InvalidRequest, msg)
}

/// Check method, headers and body before anything else happens.
pub fn check_request(
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), Denial> {
    if !token(method) || method.len() > 16 {
        return Err(invalid(format!("method {method:?} is not an HTTP method")));
    }
    if headers.len() > MAX_REQUEST_HEADERS {
        return Err(invalid(format!(
            "{} headers; at most {MAX_REQUEST_HEADERS} are accepted",
            headers.len()
        )));
    }
    for (k, v) in headers {
        if !token(k) {
            return Err(invalid(format!("header name {k:?} is not a valid token")));
        }
        if forbidden_header(k) {
            return Err(invalid(format!("header {k:?} may not be set by the guest")));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(invalid(format!(
                "header {k:?} has CR, LF or NUL in its value"
            )));
        }
        if k.len() + v.len() > MAX_HEADER_BYTES {
            return Err(invalid(format!(
                "header {k:?} is over {MAX_HEADER_BYTES} bytes"
            )));
        }
    }
    if body.len() > MAX_REQUEST_BODY_BYTES {
        return Err(invalid(format!(
            "request body is {} bytes; at most {MAX_REQUEST_BODY_BYTES} are accepted",
            body.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(k: &str, v: &str) -> Vec<(String, String)> {
        vec![(k.into(), v.into())]
    }

    #[test]
    fn forbidden_and_malformed_headers_are_refused() {
        for k in [
            "Host",
            "connection",
            "Proxy-Authorization",
            "X-Forwarded-For",
            "Transfer-Encoding",
            "Content-Length",
        ] {
            assert!(check_request("GET", &h(k, "x"), b"").is_err(), "{k}");
        }
        assert!(check_request("GET", &h("X-Ok", "a\r\nHost: evil"), b"").is_err());
        assert!(check_request("GET", &h("bad name", "x"), b"").is_err());
        assert!(check_request("GET /x HTTP/1.1", &[], b"").is_err());
        assert!(check_request("GET", &h("X-Ok", &"v".repeat(MAX_HEADER_BYTES)), b"").is_err());
        let many: Vec<_> = (0..=MAX_REQUEST_HEADERS)
            .map(|i| (format!("x-{i}"), "v".into()))
            .collect();
        assert!(check_request("GET", &many, b"").is_err());
        assert!(check_request("POST", &[], &vec![0; MAX_REQUEST_BODY_BYTES + 1]).is_err());
        // Neighbours.
        assert!(check_request("POST", &h("Authorization", "Bearer t"), b"{}").is_ok());
        assert!(check_request("GET", &h("Accept", "application/json"), b"").is_ok());
    }
}
