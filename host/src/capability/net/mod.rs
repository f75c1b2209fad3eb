//! The network capability: egress rules (its config and check) and the `Net`
//! seam that performs an allowed fetch (its host impl, [`HttpNet`]).

mod address;
mod check;
pub(crate) mod config;
mod effect;
mod fetch;
mod http;
#[cfg(feature = "wasm")]
pub(crate) mod kernel;
mod listen;
mod plan;
mod request;
mod resolve;
mod rules;
pub mod secrets;
mod socket;
mod wasi_http;

pub use address::special_range;
pub(crate) use check::check_fetch;
pub(crate) use effect::fetch;
pub(crate) use fetch::{FetchFailure, gated_fetch};
pub use http::HttpNet;
pub use listen::{LISTEN_FORM, ListenRule};
pub(crate) use plan::{aimed_at, from_plan, plan_schema};
pub(crate) use request::check_request;
pub use request::{
    CROSS_ORIGIN_SAFE_HEADERS, MAX_HEADER_BYTES, MAX_REQUEST_BODY_BYTES, MAX_REQUEST_HEADERS,
    MAX_RESPONSE_HEADER_BYTES, cross_origin_safe, forbidden_header,
};
pub use resolve::{Resolve, StaticResolver, SystemResolver};
pub use rules::{EgressRule, HostPattern, PortPattern, RULE_FORM, RuleError, Scheme};
pub use secrets::{RunSecrets, Secret, SecretSource};
pub use socket::{MAX_LOOKUP_ADDRESSES, SocketOp};
pub use wasi_http::{WasiHttpPartsError, wasi_http_request};

use crate::capability::{Held, Lent, Output, Permit, Request, Trace};
use crate::failure::Failure;
use crate::violation::{Denial, Violation};
pub(crate) use rules::canonical_ip;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use url::{Host, Url};

/// Most redirects a caps file may allow following.
pub const LIMIT_MAX_REDIRECTS: u32 = 10;

/// The egress grant: allow rules, the loopback addresses a component may
/// listen on, the redirect limit, and the loudly named allow-all switch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Egress {
    pub(crate) rules: Vec<EgressRule>,
    pub(crate) listen: Vec<ListenRule>,
    pub(crate) dangerous_allow_all: bool,
    pub(crate) max_redirects: u32,
}

/// An allowed fetch: the parsed URL, the rule that allows it and the checked
/// addresses to dial (nothing else may be dialled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The URL as parsed (WHATWG serialization).
    pub url: Url,
    /// The rule that allows it.
    pub rule: String,
    /// Every address the host resolved to, all checked, with the port.
    pub addrs: Vec<SocketAddr>,
}

/// Why [`Egress::decide`] did not produce a [`Decision`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The grant does not allow it.
    Denied(Denial),
    /// The name could not be resolved (not a violation).
    Lookup(String),
    /// The lookup ran past its time limit.
    LookupTimeout,
}

/// The rule name recorded when the allow-all switch let a fetch through.
pub const ALLOW_ALL_RULE: &str = "dangerous_allow_all";

impl Egress {
    /// The allow rules, in caps-file order.
    pub fn rules(&self) -> &[EgressRule] {
        &self.rules
    }

    /// The loopback addresses a component's sockets may bind, in
    /// caps-file order.
    pub fn listen(&self) -> &[ListenRule] {
        &self.listen
    }

    /// Whether every http(s) URL is allowed.
    pub fn allows_all(&self) -> bool {
        self.dangerous_allow_all
    }

    /// How many redirects a fetch may follow (default 0: a 3xx response is
    /// returned as it is). Every hop passes the whole decision again.
    pub fn max_redirects(&self) -> u32 {
        self.max_redirects
    }

    /// Whether `ip` may be dialled for `url`: a public address may; a
    /// special-purpose one (loopback, private, link-local, metadata, ...)
    /// only when an IP or CIDR rule for the same scheme and port names it.
    /// `Ok` says why.
    pub fn address_verdict(&self, url: &Url, ip: IpAddr) -> Result<String, String> {
        let ip = canonical_ip(ip);
        let Some(range) = special_range(ip) else {
            return Ok("public address".into());
        };
        let mut probe = url.clone();
        let literal = match ip {
            IpAddr::V4(v4) => Host::<String>::Ipv4(v4),
            IpAddr::V6(v6) => Host::Ipv6(v6),
        };
        let _ = probe.set_host(Some(&literal.to_string()));
        match self.rules.iter().find(|r| {
            matches!(r.host(), HostPattern::Ip(_) | HostPattern::Cidr(_)) && r.matches(&probe)
        }) {
            Some(rule) => Ok(format!("{range} address named by rule {rule}")),
            None => Err(format!("resolves to {range} address {ip}")),
        }
    }

    /// The whole egress decision, in order: parse the URL, match a rule
    /// (scheme, host, port), resolve the host once, and refuse if any
    /// address is special-purpose and not named by a rule. The decision
    /// lists the checked addresses; the connection must go to one of them.
    pub fn decide(
        &self,
        raw: &str,
        resolver: &dyn Resolve,
        timeout: Duration,
    ) -> Result<Decision, Refusal> {
        let (url, rule) = self.check(raw).map_err(Refusal::Denied)?;
        let addrs = self.resolve_checked(&url, resolver, timeout)?;
        Ok(Decision { url, rule, addrs })
    }

    /// The rest of the decision for a URL the rules already allowed:
    /// resolve once, refuse a special-purpose address no rule names, list
    /// the addresses that may be dialled.
    pub(crate) fn resolve_checked(
        &self,
        url: &Url,
        resolver: &dyn Resolve,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        let port = url.port_or_known_default().unwrap_or(0);
        let ips = match url.host() {
            Some(Host::Ipv4(v4)) => vec![IpAddr::V4(v4)],
            Some(Host::Ipv6(v6)) => vec![IpAddr::V6(v6)],
            Some(Host::Domain(d)) => match resolver.lookup(d, timeout) {
                Ok(ips) if !ips.is_empty() => ips,
                Ok(_) => return Err(Refusal::Lookup(format!("{d}: no addresses"))),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Err(Refusal::LookupTimeout);
                }
                Err(e) => return Err(Refusal::Lookup(format!("cannot resolve {d}: {e}"))),
            },
            None => {
                return Err(Refusal::Denied(Denial::new(
                    Violation::InvalidRequest,
                    "URL has no host",
                )));
            }
        };
        let mut addrs = Vec::with_capacity(ips.len());
        for ip in ips {
            if let Err(why) = self.address_verdict(url, ip) {
                return Err(Refusal::Denied(Denial::new(
                    Violation::EgressDenied,
                    format!("{} {why}", url.host_str().unwrap_or("")),
                )));
            }
            addrs.push(SocketAddr::new(canonical_ip(ip), port));
        }
        Ok(addrs)
    }

    /// Decide a fetch of `raw`: the parsed URL and the rule that allows it, or
    /// the denial. Only http and https are ever allowed.
    pub fn check(&self, raw: &str) -> Result<(Url, String), Denial> {
        let url = Url::parse(raw).map_err(|e| {
            Denial::new(
                Violation::InvalidRequest,
                format!("URL {} does not parse: {e}", crate::bound::quote(raw)),
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
        crate::bound::clip(url.host_str().unwrap_or("")),
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
    /// Whether the broker follows redirects (the grant's
    /// `net.max_redirects`, each hop decided again) or hands a redirect
    /// back as it came (a client that follows them itself, as wasi:http
    /// guests do: each hop is then a new request, decided whole).
    #[serde(default, skip_serializing_if = "Redirects::is_follow")]
    pub redirects: Redirects,
    /// Time limits the caller set (a wasi:http guest's request options),
    /// each applied only when shorter than the wall budget left.
    #[serde(default, skip_serializing_if = "RequestTimeouts::is_none")]
    pub timeouts: RequestTimeouts,
}

/// Time limits a caller set on one request ([`FetchRequest::timeouts`]).
/// One that runs out is an error of the request
/// ([`ErrorKind::TimedOut`](crate::ErrorKind::TimedOut)), not a violation;
/// the wall budget left bounds every request whatever they say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestTimeouts {
    /// To establish the connection, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<u64>,
    /// From the request sent to the response's headers, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<u64>,
}

impl RequestTimeouts {
    fn is_none(&self) -> bool {
        *self == RequestTimeouts::default()
    }
}

/// What the broker does with a redirect answer ([`FetchRequest::redirects`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Redirects {
    /// Follow up to the grant's `net.max_redirects`, each hop checked.
    #[default]
    Follow,
    /// Return the redirect to the caller, unfollowed.
    Return,
}

impl Redirects {
    fn is_follow(&self) -> bool {
        *self == Redirects::Follow
    }
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

/// Bytes of header names and values: text a server chose, returned to the
/// caller beside the body, so charged to `max_output_bytes` like it.
pub(crate) fn header_bytes(headers: &[(String, String)]) -> u64 {
    headers
        .iter()
        .map(|(k, v)| (k.len() + v.len()) as u64)
        .sum()
}

/// Bounds the gate puts on one fetch, from what is left of the budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchLimits {
    /// Give up after this long (connect and read together).
    pub timeout: Duration,
    /// Refuse a response whose header names and values plus body are
    /// longer than this (all of it is returned to the caller, so all of it
    /// is charged to `max_output_bytes`).
    pub max_response_bytes: u64,
}

/// Why an allowed fetch did not produce a response.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// No connection could be made to the address (the next checked
    /// address may be tried).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The time limit ran out.
    #[error("timed out")]
    Timeout,
    /// Headers and body were longer than `max_response_bytes`.
    #[error("response body exceeds the output budget")]
    BodyTooLarge,
    /// Anything else (refused connection, bad response, TLS, ...).
    #[error("{0}")]
    Failed(String),
    /// The run was cancelled while the request was in flight.
    #[error("cancelled")]
    Cancelled,
    /// A time limit the request set ([`FetchRequest::timeouts`]) ran out.
    #[error("{0}")]
    TimedOut(String),
}

/// Performs fetches the gate has allowed. The gate never calls it for a
/// denied one: that ordering is the anti-exfiltration guarantee.
pub trait Net: Send + Sync {
    /// Perform one request within `limits`, connecting to `addr` and nowhere
    /// else (the address the decision checked; never look the name up
    /// again). Follow no redirects.
    fn fetch(
        &self,
        req: &FetchRequest,
        addr: SocketAddr,
        limits: FetchLimits,
    ) -> Result<FetchResponse, NetError>;
}

impl Request for FetchRequest {
    fn kind(&self) -> crate::capability::OpKind {
        crate::capability::OpKind::NetFetch
    }

    fn target(&self) -> &str {
        &self.url
    }

    fn check(&self, held: &Held<'_>) -> Result<Permit, Denial> {
        check_fetch(held.egress, self)
    }

    fn perform(
        &self,
        permit: Permit,
        held: &Held<'_>,
        lent: &Lent<'_>,
    ) -> (Result<Output, Failure>, Trace) {
        fetch(held, self, permit, lent)
    }

    fn slow(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
