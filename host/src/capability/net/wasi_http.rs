//! A wasi:http request's parts as the broker's request: the translation
//! the wasm host's wasi:http door makes (`wasm/imports/http/`), kept
//! here without wasmtime's types so it can be fuzzed with the gate alone.
//! The URL is the parts glued as the guest set them; the gate parses it
//! (step 2 of the egress checks), so what is judged is what is dialled.

use super::{FetchRequest, Redirects};

/// Why a wasi:http request cannot become a broker request (each is a
/// wasi:http error code to the guest, before the gate is asked).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WasiHttpPartsError {
    /// The path is neither empty nor starts with `/` or `?` (only
    /// OPTIONS' `*` gets past wasi:http's own parse: glued to the
    /// authority it would name another host).
    #[error("the path must start with / or ?")]
    Path,
    /// The authority is empty, or holds what would make part of it (or of
    /// the path) read as something else once glued into a URL: `/`, `\`,
    /// `?`, `#`, `@` (user info), whitespace or control characters. With
    /// none, `https:///api.example.com/x` would name the host in its path.
    #[error("the authority must be a host, optionally with :port")]
    Authority,
    /// A header value is not UTF-8.
    #[error("header {0} is not UTF-8")]
    HeaderValue(String),
}

/// The broker's request for a wasi:http request: `scheme` (`None` is
/// https, as wasi:http's default), `authority` as set, `path_with_query`
/// (`None` is `/`), the headers as set but `content-length` (the guest's
/// declaration of its body's length, which wasi:http holds the body to;
/// the broker sets its own). The body is filled in once whole; redirects
/// are returned to the guest, whose client follows them.
pub fn wasi_http_request<'a>(
    method: &str,
    scheme: Option<&str>,
    authority: Option<&str>,
    path_with_query: Option<&str>,
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<FetchRequest, WasiHttpPartsError> {
    let scheme = scheme.unwrap_or("https");
    let authority = authority.unwrap_or_default();
    let path = path_with_query.unwrap_or("/");
    if authority.is_empty()
        || authority.chars().any(|c| {
            matches!(c, '/' | '\\' | '?' | '#' | '@') || c.is_whitespace() || c.is_control()
        })
    {
        return Err(WasiHttpPartsError::Authority);
    }
    if !path.starts_with(['/', '?']) {
        return Err(WasiHttpPartsError::Path);
    }
    let mut kept = Vec::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        let value = std::str::from_utf8(value)
            .map_err(|_| WasiHttpPartsError::HeaderValue(crate::bound::quote(name)))?;
        kept.push((name.to_string(), value.to_string()));
    }
    Ok(FetchRequest {
        method: method.to_string(),
        url: format!("{scheme}://{authority}{path}"),
        headers: kept,
        body: Vec::new(),
        redirects: Redirects::Return,
        timeouts: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_glue_into_the_url_the_guest_set() {
        let h: [(&str, &[u8]); 2] = [("accept", b"*/*"), ("Content-Length", b"3")];
        let r =
            wasi_http_request("POST", Some("http"), Some("a.test:8080"), Some("/x?y"), h).unwrap();
        assert_eq!(r.url, "http://a.test:8080/x?y");
        assert_eq!(r.headers, [("accept".to_string(), "*/*".to_string())]);
        assert_eq!(r.redirects, Redirects::Return);
        let r = wasi_http_request("GET", None, Some("a.test"), None, []).unwrap();
        assert_eq!(r.url, "https://a.test/");
        assert_eq!(
            wasi_http_request("OPTIONS", None, Some("a.test"), Some("*"), []),
            Err(WasiHttpPartsError::Path)
        );
        for authority in [
            None,
            Some(""),
            Some("a.test/x"),
            Some("u@a.test"),
            Some("a.test\\b"),
            Some("a .test"),
        ] {
            assert_eq!(
                wasi_http_request("GET", None, authority, Some("/api.example.com/"), []),
                Err(WasiHttpPartsError::Authority),
                "{authority:?}"
            );
        }
        let bad: [(&str, &[u8]); 1] = [("x", b"\xff")];
        assert!(wasi_http_request("GET", None, Some("a.test"), None, bad).is_err());
    }
}
