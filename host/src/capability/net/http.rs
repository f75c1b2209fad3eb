//! The real HTTP client behind [`Net`]: ureq with rustls, configured so that
//! nothing ambient leaks in (no proxy from the environment) and nothing
//! happens that the gate did not decide: the connection goes to the checked
//! address (a resolver that answers only that), and no redirect is followed.

use super::{FetchLimits, FetchRequest, FetchResponse, MAX_RESPONSE_HEADER_BYTES, Net, NetError};
use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// HTTP and HTTPS over ureq (rustls, bundled Mozilla roots).
#[derive(Debug, Default, Clone, Copy)]
pub struct HttpNet;

impl HttpNet {
    /// A client with the settings described above.
    pub fn new() -> Self {
        HttpNet
    }
}

/// Answers every lookup with the one address the gate checked, and only for
/// the host the gate checked.
#[derive(Debug)]
struct PinnedResolver {
    host: String,
    addr: SocketAddr,
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _: &Config,
        _: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if !host.eq_ignore_ascii_case(self.host.trim_start_matches('[').trim_end_matches(']')) {
            return Err(ureq::Error::HostNotFound);
        }
        let mut out = self.empty();
        out.push(self.addr);
        Ok(out)
    }
}

/// The request's own time limits that are shorter than the budget's (a
/// longer one would never be what runs out first).
struct Asked {
    connect: Option<Duration>,
    first_byte: Option<Duration>,
}

impl Asked {
    fn new(req: &FetchRequest, budget: Duration) -> Self {
        let shorter = |ms: Option<u64>| ms.map(Duration::from_millis).filter(|t| *t < budget);
        Asked {
            connect: shorter(req.timeouts.connect_ms),
            first_byte: shorter(req.timeouts.first_byte_ms),
        }
    }
}

fn classify(e: ureq::Error, asked: &Asked) -> NetError {
    use std::io::ErrorKind as K;
    use ureq::Timeout as T;
    match e {
        ureq::Error::Timeout(T::Connect) if let Some(t) = asked.connect => {
            NetError::TimedOut(format!(
                "connect timed out after {} ms (the request's connect timeout)",
                t.as_millis()
            ))
        }
        ureq::Error::Timeout(T::RecvResponse) if let Some(t) = asked.first_byte => {
            NetError::TimedOut(format!(
                "no response within {} ms (the request's first-byte timeout)",
                t.as_millis()
            ))
        }
        ureq::Error::Timeout(_) => NetError::Timeout,
        ureq::Error::BodyExceedsLimit(_) => NetError::BodyTooLarge,
        ureq::Error::Io(io) => match io.kind() {
            K::TimedOut => NetError::Timeout,
            K::ConnectionRefused
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::AddrNotAvailable => NetError::Connect(io.to_string()),
            _ => NetError::Failed(format!("io: {io}")),
        },
        other => NetError::Failed(other.to_string()),
    }
}

impl Net for HttpNet {
    fn fetch(
        &self,
        req: &FetchRequest,
        addr: SocketAddr,
        limits: FetchLimits,
    ) -> Result<FetchResponse, NetError> {
        let url =
            url::Url::parse(&req.url).map_err(|e| NetError::Failed(format!("bad URL: {e}")))?;
        let asked = Asked::new(req, limits.timeout);
        let config = Config::builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(limits.timeout))
            .timeout_connect(asked.connect)
            .timeout_recv_response(asked.first_byte)
            .max_response_header_size(MAX_RESPONSE_HEADER_BYTES)
            .user_agent("sbx-wasm")
            .build();
        let resolver = PinnedResolver {
            host: url.host_str().unwrap_or_default().to_string(),
            addr,
        };
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver);
        let mut builder = ureq::http::Request::builder()
            .method(req.method.as_str())
            .uri(url.as_str());
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let request = builder
            .body(req.body.clone())
            .map_err(|e| NetError::Failed(format!("bad request: {e}")))?;
        let response = agent.run(request).map_err(|e| classify(e, &asked))?;
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        // Headers are returned too: the body gets what they leave.
        let Some(max_body) = limits
            .max_response_bytes
            .checked_sub(super::header_bytes(&headers))
        else {
            return Err(NetError::BodyTooLarge);
        };
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(max_body.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| {
                // The body reader wraps ureq's own error (a global timeout
                // while a server drips bytes) in an io::Error.
                let inner = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>());
                match (e.kind(), inner) {
                    (std::io::ErrorKind::TimedOut, _) | (_, Some(ureq::Error::Timeout(_))) => {
                        NetError::Timeout
                    }
                    _ => NetError::Failed(e.to_string()),
                }
            })?;
        if body.len() as u64 > max_body {
            return Err(NetError::BodyTooLarge);
        }
        Ok(FetchResponse {
            status,
            headers,
            body,
        })
    }
}
