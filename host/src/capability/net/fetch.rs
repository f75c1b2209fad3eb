//! One gated fetch, redirects included: decide, dial a checked address,
//! and, when the grant allows following a redirect, decide the next hop from
//! scratch. Time is bounded by one deadline across every lookup, connection
//! and hop.

use super::{
    Egress, FetchLimits, FetchRequest, FetchResponse, Net, NetError, Refusal, Resolve, RunSecrets,
    cross_origin_safe,
};
use crate::CancelHandle;
use crate::cancel::{Abandoned, unless_cancelled};
use crate::capability::Trace;
use crate::quiet_panic::catch_quietly;
use crate::violation::{Denial, Violation};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// Why a gated fetch produced no response.
#[derive(Debug)]
pub(crate) enum FetchFailure {
    Denied(Denial),
    Timeout,
    BodyTooLarge,
    Failed(String),
    /// A time limit the request set ran out.
    TimedOut(String),
    Cancelled,
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

/// What sending `req` costs against `max_sent_bytes`: its URL, header
/// names and values, and body.
fn sent_bytes(req: &FetchRequest) -> u64 {
    (req.url.len() + req.body.len()) as u64 + super::header_bytes(&req.headers)
}

/// One request to `addr`. With a `cancel` switch it runs on a thread of its
/// own, so a cancel ends the wait within 5 ms (the connection then closes
/// at its own deadline, in the background).
fn dial(
    net: &Arc<dyn Net>,
    req: &FetchRequest,
    addr: SocketAddr,
    limits: FetchLimits,
    cancel: Option<&CancelHandle>,
) -> Result<FetchResponse, NetError> {
    let Some(cancel) = cancel else {
        return net.fetch(req, addr, limits);
    };
    let (net, req) = (net.clone(), req.clone());
    let run = move || catch_quietly(|| net.fetch(&req, addr, limits));
    match unless_cancelled(cancel, run) {
        Ok(Ok(r)) => r,
        Ok(Err(message)) => Err(NetError::Failed(format!(
            "the network layer panicked: {}",
            crate::bound::clip(&message)
        ))),
        Err(Abandoned::Cancelled) => Err(NetError::Cancelled),
        Err(Abandoned::Failed(why)) => Err(NetError::Failed(why.to_string())),
    }
}

/// Run `req` through the egress decision and the network.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gated_fetch(
    egress: &Egress,
    hop: &dyn Fn(&str) -> Result<(), Denial>,
    secrets: &RunSecrets,
    resolver: &dyn Resolve,
    net: &Arc<dyn Net>,
    mut req: FetchRequest,
    permitted: Url,
    wall_left: Duration,
    max_response_bytes: u64,
    sent: &dyn Fn(u64) -> Result<(), Denial>,
    cancel: Option<&CancelHandle>,
) -> (Result<FetchResponse, FetchFailure>, Trace) {
    let deadline = Instant::now() + wall_left;
    let left = || deadline.saturating_duration_since(Instant::now());
    let mut trace = Trace::default();
    // The first hop was checked by the permit's check; each redirect is a
    // new hop, decided whole (rules, then addresses).
    let mut checked = Some(permitted);
    loop {
        let decided = match checked.take() {
            Some(url) => egress
                .resolve_checked(&url, resolver, left())
                .map(|addrs| (url, None, addrs)),
            // A redirect hop is also a send to its rule's sink: the flow
            // rules decide it before any lookup.
            None => match egress
                .check(&req.url)
                .and_then(|(u, r)| hop(&r).map(|()| (u, r)))
            {
                Ok((url, rule)) => egress
                    .resolve_checked(&url, resolver, left())
                    .map(|addrs| (url, Some(rule), addrs)),
                Err(d) => Err(Refusal::Denied(d)),
            },
        };
        let (url, rule, addrs) = match decided {
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
        if rule.is_some() {
            // The last hop's rule; the first hop's is the permit's.
            trace.rule = rule;
        }
        req.url = url.to_string();
        let mut response = Err(FetchFailure::Failed("no address to dial".into()));
        // Each hop's request is charged once, as sent (secrets in), before
        // its first dial: an address that refuses the connection is sent
        // nothing, and the next is tried with the same charge.
        let mut charged = false;
        for addr in &addrs {
            trace.address = Some(*addr);
            let limits = FetchLimits {
                timeout: left(),
                max_response_bytes,
            };
            if limits.timeout.is_zero() {
                return (Err(FetchFailure::Timeout), trace);
            }
            // The request keeps its placeholders: each hop decides again
            // whether a secret may go in it.
            let hop = if secrets.is_empty() {
                std::borrow::Cow::Borrowed(&req)
            } else {
                let (headers, done) = secrets.substitute(&url, &req.headers, &req.body);
                for name in done.used {
                    if !trace.secrets.contains(&name) {
                        trace.secrets.push(name);
                    }
                }
                for note in done.refused {
                    let note = format!("placeholder not substituted: {note}");
                    if !trace.secret_notes.contains(&note) {
                        trace.secret_notes.push(note);
                    }
                }
                let mut hop = req.clone();
                hop.headers = headers;
                std::borrow::Cow::Owned(hop)
            };
            if !charged {
                let n = sent_bytes(&hop);
                if let Err(d) = sent(n) {
                    return (Err(FetchFailure::Denied(d)), trace);
                }
                trace.sent_bytes += n;
                charged = true;
            }
            trace.begun = Some(format!(
                "the request to {addr} was under way and may have reached the server"
            ));
            response = match dial(net, &hop, *addr, limits, cancel) {
                Ok(r) => Ok(r),
                Err(NetError::Connect(e)) => {
                    response = Err(FetchFailure::Failed(format!(
                        "cannot connect to {addr}: {e}"
                    )));
                    continue;
                }
                Err(NetError::Timeout) => Err(FetchFailure::Timeout),
                Err(NetError::Cancelled) => Err(FetchFailure::Cancelled),
                Err(NetError::TimedOut(e)) => Err(FetchFailure::TimedOut(e)),
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
        trace.begun = Some(format!(
            "the server answered {} and the answer was being read",
            resp.status
        ));
        let location = header(&resp.headers, "location");
        if !is_redirect(resp.status)
            || req.redirects == super::Redirects::Return
            || trace.redirects >= egress.max_redirects()
            || location.is_none()
        {
            return (Ok(resp), trace);
        }
        let next = match url.join(location.unwrap_or_default()) {
            Ok(u) => u,
            Err(e) => {
                return (
                    Err(FetchFailure::Failed(format!("bad redirect Location: {e}"))),
                    trace,
                );
            }
        };
        // A bound host may echo the credential it was sent into the
        // `Location` it answers with; dialling that hop would hand the value
        // to whoever it names (another granted origin, or the same one in a
        // log). Refused before any lookup, whatever origin it is on.
        let carried = {
            let mut names = secrets.found_in(next.as_str());
            names.extend(secrets.found_in(location.unwrap_or_default()));
            names.sort();
            names.dedup();
            names
        };
        if !carried.is_empty() {
            let mut shown = next.to_string();
            secrets.redact_text(&mut shown);
            let d = Denial::new(
                Violation::SecretInRedirect,
                format!(
                    "redirect {} to {}: the URL holds the value of secret {}; not followed",
                    trace.redirects + 1,
                    crate::bound::clip(&shown),
                    carried.join(", ")
                ),
            );
            return (Err(FetchFailure::Denied(d)), trace);
        }
        if next.origin() != url.origin() {
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
