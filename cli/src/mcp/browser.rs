//! The transport's `Origin` and `Host` rules (DNS-rebinding protection),
//! checked before a body is read. rmcp's service checks them again for
//! `/mcp`; the workspace endpoint has only these. No `super::` here: the
//! door's fuzz target includes this file as it is.

/// The `Origin` and `Host` rules of the transport, checked before a body
/// is read (and for the workspace endpoint, which rmcp's service does not
/// answer); rmcp checks them again.
pub(crate) struct Browser {
    pub(crate) origins: Vec<String>,
    /// Empty: any host.
    pub(crate) hosts: Vec<String>,
}

impl Browser {
    /// Why a request may not be answered, if it may not: an `Origin` not
    /// listed (exactly), or a `Host` whose name is not listed.
    pub(crate) fn refuses(&self, headers: &hyper::HeaderMap) -> Option<&'static str> {
        let text = |name| headers.get(name).map(|v| v.to_str().unwrap_or("\0"));
        if let Some(origin) = text(hyper::header::ORIGIN)
            && !self.origins.iter().any(|o| origin_matches(o, origin))
        {
            return Some("forbidden: this Origin is not allowed (--allowed-origin)");
        }
        if self.hosts.is_empty() {
            return None;
        }
        let host = text(hyper::header::HOST).unwrap_or("");
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => host.rsplit_once(':').map_or(host, |(name, _)| name),
        };
        let listed = self.hosts.iter().any(|h| {
            h.eq_ignore_ascii_case(host) || h.trim_matches(['[', ']']).eq_ignore_ascii_case(name)
        });
        (!listed).then_some("forbidden: this Host is not allowed (--allowed-host)")
    }
}

/// An `--allowed-origin` entry against a request's `Origin`: the same
/// origin (scheme and host in any case, a default port written or not), or
/// for an entry ending in `:*` the same scheme and host on any port.
fn origin_matches(allowed: &str, origin: &str) -> bool {
    let allowed = normal(allowed.trim_end_matches('/'));
    let origin = normal(origin);
    match allowed.strip_suffix(":*") {
        Some(base) => {
            origin == base
                || origin
                    .strip_prefix(base)
                    .and_then(|p| p.strip_prefix(':'))
                    .is_some_and(|port| {
                        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                    })
        }
        None => allowed == origin,
    }
}

/// An origin in lower case without its scheme's default port.
fn normal(origin: &str) -> String {
    let o = origin.to_ascii_lowercase();
    for (scheme, port) in [("https://", ":443"), ("http://", ":80")] {
        if o.starts_with(scheme) && o.ends_with(port) {
            return o[..o.len() - port.len()].to_string();
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::origin_matches;

    #[test]
    fn an_origin_matches_its_entry_whatever_the_case_or_default_port() {
        for (allowed, origin) in [
            ("https://app.example", "https://app.example"),
            ("https://app.example:443", "https://app.example"),
            ("https://app.example", "https://APP.example:443"),
            ("http://localhost:*", "http://localhost:5173"),
            ("http://localhost:*", "http://localhost"),
            ("http://127.0.0.1:8765/", "http://127.0.0.1:8765"),
        ] {
            assert!(origin_matches(allowed, origin), "{allowed} {origin}");
        }
        for (allowed, origin) in [
            ("https://app.example", "http://app.example"),
            ("https://app.example", "https://app.example:8443"),
            ("https://app.example", "https://app.example.evil"),
            ("http://localhost:*", "http://localhost.evil:80"),
            ("http://localhost:*", "http://localhost:80x"),
            ("http://127.0.0.1:8765", "http://127.0.0.1:1"),
            ("http://127.0.0.1:8765", "null"),
        ] {
            assert!(!origin_matches(allowed, origin), "{allowed} {origin}");
        }
    }
}
