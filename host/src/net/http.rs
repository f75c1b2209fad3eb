//! The real HTTP client behind [`Net`]: ureq, configured so that nothing
//! ambient leaks in (no proxy from the environment) and nothing happens that
//! the gate did not decide (no redirect is followed: a redirect is returned to
//! the caller as a response, and a new fetch passes the gate again).

use super::{FetchLimits, FetchRequest, FetchResponse, Net, NetError};
use std::io::Read;

/// HTTP and HTTPS over ureq (rustls, bundled Mozilla roots).
#[derive(Debug, Default, Clone, Copy)]
pub struct HttpNet;

impl HttpNet {
    /// A client with the settings described above.
    pub fn new() -> Self {
        HttpNet
    }
}

fn classify(e: ureq::Error) -> NetError {
    match e {
        ureq::Error::Timeout(_) => NetError::Timeout,
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => NetError::Timeout,
        ureq::Error::BodyExceedsLimit(_) => NetError::BodyTooLarge,
        other => NetError::Failed(other.to_string()),
    }
}

impl Net for HttpNet {
    fn fetch(&self, req: &FetchRequest, limits: FetchLimits) -> Result<FetchResponse, NetError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(limits.timeout))
            .user_agent("sbx-wasm")
            .build()
            .into();
        let mut builder = ureq::http::Request::builder()
            .method(req.method.as_str())
            .uri(req.url.as_str());
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let request = builder
            .body(req.body.clone())
            .map_err(|e| NetError::Failed(format!("bad request: {e}")))?;
        let response = agent.run(request).map_err(classify)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(limits.max_body_bytes.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => NetError::Timeout,
                _ => NetError::Failed(e.to_string()),
            })?;
        if body.len() as u64 > limits.max_body_bytes {
            return Err(NetError::BodyTooLarge);
        }
        Ok(FetchResponse {
            status,
            headers,
            body,
        })
    }
}
