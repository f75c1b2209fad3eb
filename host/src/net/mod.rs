//! The network capability: egress rules (its config and check) and the `Net`
//! seam that performs an allowed fetch (its host impl, [`HttpNet`]).

mod http;
mod rules;

pub use http::HttpNet;
pub use rules::{EgressRule, HostPattern, PortPattern, RULE_FORM, RuleError, Scheme};

use crate::violation::{Denial, Violation};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use url::Url;

/// The egress grant: allow rules, and the loudly named allow-all switch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Egress {
    pub(crate) rules: Vec<EgressRule>,
    pub(crate) dangerous_allow_all: bool,
}

/// The rule name recorded when the allow-all switch let a fetch through.
pub const ALLOW_ALL_RULE: &str = "dangerous_allow_all";

impl Egress {
    /// The allow rules, in caps-file order.
    pub fn rules(&self) -> &[EgressRule] {
        &self.rules
    }

    /// Whether every http(s) URL is allowed.
    pub fn allows_all(&self) -> bool {
        self.dangerous_allow_all
    }

    /// Decide a fetch of `raw`: the parsed URL and the rule that allows it, or
    /// the denial. Only http and https are ever allowed.
    pub fn check(&self, raw: &str) -> Result<(Url, String), Denial> {
        let url = Url::parse(raw).map_err(|e| {
            Denial::new(
                Violation::InvalidRequest,
                format!("URL {raw:?} does not parse: {e}"),
            )
        })?;
        if Scheme::parse_url(&url).is_none() {
            return Err(Denial::new(
                Violation::EgressDenied,
                format!(
                    "scheme {:?} is never allowed (only http and https)",
                    url.scheme()
                ),
            ));
        }
        if self.dangerous_allow_all {
            return Ok((url, ALLOW_ALL_RULE.to_string()));
        }
        match self.rules.iter().find(|r| r.matches(&url)) {
            Some(rule) => Ok((url, rule.as_str().to_string())),
            None => Err(Denial::new(
                Violation::EgressDenied,
                format!("{} is not covered by any egress rule", url_origin(&url)),
            )),
        }
    }
}

/// `scheme://host:port` of a URL, for messages.
pub(crate) fn url_origin(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

impl Scheme {
    fn parse_url(url: &Url) -> Option<Scheme> {
        match url.scheme() {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            _ => None,
        }
    }
}

/// An HTTP request the gate has already allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL, as parsed by the gate.
    pub url: String,
    /// Request headers, in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Request body.
    #[serde(default)]
    pub body: Vec<u8>,
}

/// What came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchResponse {
    /// HTTP status code.
    pub status: u16,
    /// Response headers, in order.
    pub headers: Vec<(String, String)>,
    /// Response body.
    pub body: Vec<u8>,
}

/// Bounds the gate puts on one fetch, from what is left of the budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchLimits {
    /// Give up after this long (connect and read together).
    pub timeout: Duration,
    /// Refuse a response body longer than this.
    pub max_body_bytes: u64,
}

/// Why an allowed fetch did not produce a response.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The time limit ran out.
    #[error("timed out")]
    Timeout,
    /// The body was longer than `max_body_bytes`.
    #[error("response body exceeds the output budget")]
    BodyTooLarge,
    /// Anything else (refused connection, bad response, TLS, ...).
    #[error("{0}")]
    Failed(String),
}

/// Performs fetches the gate has allowed. The gate never calls it for a
/// denied one: that ordering is the anti-exfiltration guarantee.
pub trait Net: Send + Sync {
    /// Perform one request within `limits`.
    fn fetch(&self, req: &FetchRequest, limits: FetchLimits) -> Result<FetchResponse, NetError>;
}
