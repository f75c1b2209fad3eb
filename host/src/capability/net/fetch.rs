//! One gated fetch, redirects included: decide, dial a checked address,
//! and, when the grant allows following a redirect, decide the next hop from
//! scratch. Time is bounded by one deadline across every lookup, connection
//! and hop.

use super::{
    Egress, FetchLimits, FetchRequest, FetchResponse, Net, NetError, Refusal, Resolve,
    cross_origin_safe,
};
use crate::capability::Trace;
use crate::violation::Denial;

use std::time::{Duration, Instant};

/// Why a gated fetch produced no response.
#[derive(Debug)]
pub(crate) enum FetchFailure {
    Denied(Denial),
    Timeout,
    BodyTooLarge,
    Failed(String),
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Run `req` through the egress decision and the network.
pub(crate) fn gated_fetch(
    egress: &Egress,
    resolver: &dyn Resolve,
    net: &dyn Net,
    mut req: FetchRequest,
    wall_left: Duration,
    max_response_bytes: u64,
) -> (Result<FetchResponse, FetchFailure>, Trace) {
    let deadline = Instant::now() + wall_left;
    let left = || deadline.saturating_duration_since(Instant::now());
    let mut trace = Trace::default();
    loop {
        let decision = match egress.decide(&req.url, resolver, left()) {
            Ok(d) => d,
            Err(Refusal::Denied(mut d)) => {
                if trace.redirects > 0 {
                    d.message = format!(
                        "redirect {} to {}: {}",
                        trace.redirects,
                        crate::bound::clip(&req.url),
                        d.message
                    );
                }
                return (Err(FetchFailure::Denied(d)), trace);
            }
            Err(Refusal::LookupTimeout) => return (Err(FetchFailure::Timeout), trace),
            Err(Refusal::Lookup(e)) => return (Err(FetchFailure::Failed(e)), trace),
        };
        trace.rule = Some(decision.rule.clone());
        req.url = decision.url.to_string();
        let mut response = Err(FetchFailure::Failed("no address to dial".into()));
        for addr in &decision.addrs {
            trace.address = Some(*addr);
            let limits = FetchLimits {
                timeout: left(),
                max_response_bytes,
            };
            if limits.timeout.is_zero() {
                return (Err(FetchFailure::Timeout), trace);
            }
            response = match net.fetch(&req, *addr, limits) {
                Ok(r) => Ok(r),
                Err(NetError::Connect(e)) => {
                    response = Err(FetchFailure::Failed(format!(
                        "cannot connect to {addr}: {e}"
                    )));
                    continue;
                }
                Err(NetError::Timeout) => Err(FetchFailure::Timeout),
                Err(NetError::BodyTooLarge) => Err(FetchFailure::BodyTooLarge),
                Err(e) => Err(FetchFailure::Failed(e.to_string())),
            };
            break;
        }
        let resp = match response {
            Ok(r) => r,
            Err(f) => return (Err(f), trace),
        };
        trace.status = Some(resp.status);
        let location = header(&resp.headers, "location");
        if !is_redirect(resp.status)
            || trace.redirects >= egress.max_redirects()
            || location.is_none()
        {
            return (Ok(resp), trace);
        }
        let next = match decision.url.join(location.unwrap_or_default()) {
            Ok(u) => u,
            Err(e) => {
                return (
                    Err(FetchFailure::Failed(format!("bad redirect Location: {e}"))),
                    trace,
                );
            }
        };
        if next.origin() != decision.url.origin() {
            // Credentials are for the origin they were given to, whatever
            // the header is called: only safelisted headers cross.
            req.headers.retain(|(k, _)| {
                let keep = cross_origin_safe(k);
                if !keep
                    && !trace
                        .dropped_headers
                        .iter()
                        .any(|d| d.eq_ignore_ascii_case(k))
                {
                    trace.dropped_headers.push(k.clone());
                }
                keep
            });
        }
        let to_get =
            resp.status == 303 || (matches!(resp.status, 301 | 302) && req.method == "POST");
        if to_get {
            req.method = "GET".into();
            req.body.clear();
        }
        req.url = next.to_string();
        trace.redirects += 1;
    }
}
