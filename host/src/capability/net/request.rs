//! Bounds on what a guest may send: URL length, header count and size, body
//! size, control characters, and headers it may never set (they would let it
//! steer the connection, the proxy or what a server believes about the
//! client). Checked first, before the URL is parsed or anything is copied.

use crate::bound::{MAX_URL_BYTES, quote};
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
    // Client-IP headers: a server or a proxy in front of it may believe
    // them and treat the request as coming from inside.
    "x-real-ip",
    "true-client-ip",
    "x-client-ip",
    "client-ip",
    "x-cluster-client-ip",
    "cf-connecting-ip",
    "fastly-client-ip",
    "x-originating-ip",
    "x-remote-ip",
    "x-remote-addr",
    "x-host",
    "x-original-url",
    "x-rewrite-url",
];

/// Whether a header name is forbidden (including every `proxy-*` and
/// `x-forwarded-*` header).
pub fn forbidden_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    FORBIDDEN.contains(&n.as_str()) || n.starts_with("proxy-") || n.starts_with("x-forwarded-")
}

/// Request headers forwarded when a redirect leaves the origin they were
/// given to: the CORS-safelisted ones and a few that describe the client's
/// preferences. Every other header (credentials under any name, API keys,
/// custom tokens) is dropped at an origin change.
pub const CROSS_ORIGIN_SAFE_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "accept-language",
    "content-language",
    "content-type",
    "user-agent",
    "cache-control",
    "pragma",
];

/// Whether `name` is forwarded across origins (see
/// [`CROSS_ORIGIN_SAFE_HEADERS`]).
pub fn cross_origin_safe(name: &str) -> bool {
    CROSS_ORIGIN_SAFE_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
}

/// A control character in a header value: every C0 byte but horizontal tab
/// (which HTTP allows inside a value), and DEL.
fn control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
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

/// Whether the URL's authority ends in `:` (`http://example.com:/`): the
/// WHATWG parser takes that as no port at all.
fn empty_port(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host.ends_with(':')
}

/// Check method, URL size, headers and body before anything else happens.
pub(crate) fn check_request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), Denial> {
    if !token(method) || method.len() > 16 {
        return Err(invalid(format!(
            "method {} is not an HTTP method",
            quote(method)
        )));
    }
    if url.len() > MAX_URL_BYTES {
        return Err(invalid(format!(
            "URL is {} bytes long; at most {MAX_URL_BYTES} are accepted",
            url.len()
        )));
    }
    if empty_port(url) {
        return Err(invalid(format!(
            "URL {} names an empty port (read as the scheme's default, which the \
             sender did not write)",
            quote(url)
        )));
    }
    if headers.len() > MAX_REQUEST_HEADERS {
        return Err(invalid(format!(
            "{} headers; at most {MAX_REQUEST_HEADERS} are accepted",
            headers.len()
        )));
    }
    for (k, v) in headers {
        // Size first: the messages below quote the name.
        if k.len() + v.len() > MAX_HEADER_BYTES {
            return Err(invalid(format!(
                "header {} is over {MAX_HEADER_BYTES} bytes",
                quote(k)
            )));
        }
        if !token(k) {
            return Err(invalid(format!(
                "header name {} is not a valid token",
                quote(k)
            )));
        }
        if forbidden_header(k) {
            return Err(invalid(format!(
                "header {} may not be set by the guest",
                quote(k)
            )));
        }
        if v.bytes().any(control) {
            return Err(invalid(format!(
                "header {} has a control character in its value",
                quote(k)
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
    fn an_empty_port_is_refused_and_a_written_one_allowed() {
        for bad in [
            "http://example.com:/",
            "http://example.com:",
            "https://u@example.com:?q",
            "http://[::1]:/x",
            "http://example.com:\\x",
        ] {
            assert!(check_request("GET", bad, &[], b"").is_err(), "{bad}");
        }
        for ok in [
            "http://example.com/",
            "http://example.com:8080/a:b",
            "http://[::1]/x",
            "http://example.com/?q=a:",
        ] {
            assert!(check_request("GET", ok, &[], b"").is_ok(), "{ok}");
        }
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
            assert!(check_request("GET", U, &h(k, "x"), b"").is_err(), "{k}");
        }
        assert!(check_request("GET", U, &h("X-Ok", "a\r\nHost: evil"), b"").is_err());
        assert!(check_request("GET", U, &h("bad name", "x"), b"").is_err());
        assert!(check_request("GET /x HTTP/1.1", U, &[], b"").is_err());
        assert!(check_request("GET", U, &h("X-Ok", &"v".repeat(MAX_HEADER_BYTES)), b"").is_err());
        let many: Vec<_> = (0..=MAX_REQUEST_HEADERS)
            .map(|i| (format!("x-{i}"), "v".into()))
            .collect();
        assert!(check_request("GET", U, &many, b"").is_err());
        assert!(check_request("POST", U, &[], &vec![0; MAX_REQUEST_BODY_BYTES + 1]).is_err());
        // Neighbours.
        assert!(check_request("POST", U, &h("Authorization", "Bearer t"), b"{}").is_ok());
        assert!(check_request("GET", U, &h("Accept", "application/json"), b"").is_ok());
    }

    const U: &str = "https://api.example/";

    #[test]
    fn client_ip_headers_and_control_characters_are_refused() {
        for k in [
            "X-Real-IP",
            "True-Client-IP",
            "X-Client-IP",
            "CF-Connecting-IP",
            "Forwarded",
            "Via",
            "X-Forwarded-Host",
        ] {
            assert!(
                check_request("GET", U, &h(k, "127.0.0.1"), b"").is_err(),
                "{k}"
            );
        }
        for bad in ["a\x0bb", "a\x7fb", "a\x01b", "a\x1fb", "\x00"] {
            let d = check_request("GET", U, &h("X-Ok", bad), b"").unwrap_err();
            assert_eq!(d.violation, Violation::InvalidRequest, "{bad:?}");
        }
        // Neighbours: a tab inside a value is HTTP; X-Request-Id is no IP.
        assert!(check_request("GET", U, &h("X-Ok", "a\tb"), b"").is_ok());
        assert!(check_request("GET", U, &h("X-Request-Id", "127.0.0.1"), b"").is_ok());
    }

    #[test]
    fn urls_are_bounded_before_parsing() {
        let long = format!("https://api.example/{}", "a".repeat(MAX_URL_BYTES));
        let d = check_request("GET", &long, &[], b"").unwrap_err();
        assert_eq!(d.violation, Violation::InvalidRequest);
        assert!(d.message.len() < 200, "the message does not repeat the URL");
        let fits = format!("https://api.example/{}", "a".repeat(MAX_URL_BYTES - 40));
        assert!(check_request("GET", &fits, &[], b"").is_ok());
    }

    #[test]
    fn only_safelisted_headers_cross_origins() {
        assert!(cross_origin_safe("Accept"));
        assert!(cross_origin_safe("content-type"));
        for k in [
            "Authorization",
            "Cookie",
            "X-Api-Key",
            "Api-Key",
            "X-Auth-Token",
        ] {
            assert!(!cross_origin_safe(k), "{k}");
        }
    }
}
