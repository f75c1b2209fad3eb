//! The network capability's effect: one gated fetch (resolve once, check
//! every address, dial a checked one, redirects decided hop by hop) within
//! the time and output the gate lends.

use super::check::permitted_url;
use super::{FetchFailure, FetchRequest, gated_fetch};
use crate::capability::Trace;
use crate::capability::{Held, Lent};
use crate::capability::{Output, Permit};
use crate::failure::{ErrorKind, Failure, OpError};
use crate::quiet_panic::catch_quietly;
use crate::violation::{Denial, Violation};

/// Fetch `req` under the grant `held`, within the time and output `lent`.
pub(crate) fn fetch(
    held: &Held<'_>,
    req: &FetchRequest,
    permit: Permit,
    lent: &Lent<'_>,
) -> (Result<Output, Failure>, Trace) {
    let Some(url) = permitted_url(permit) else {
        let d = Denial::new(Violation::InvalidRequest, "a fetch needs a fetch permit");
        return (Err(Failure::Denied(d)), Trace::default());
    };
    let timeout = lent.wall_left;
    let run = || {
        let egress = held.egress;
        let hop = |rule: &str| held.flow.hop(rule, held.results_to_caller);
        gated_fetch(
            egress,
            &hop,
            held.secrets,
            held.resolver,
            held.net,
            req.clone(),
            url,
            timeout,
            lent.output_left,
            lent.sent,
            held.cancel,
        )
    };
    let (result, mut trace) = match catch_quietly(run) {
        Ok(r) => r,
        Err(message) => (
            Err(FetchFailure::Failed(format!(
                "the network layer panicked: {}",
                crate::bound::clip(&message)
            ))),
            Trace::default(),
        ),
    };
    let result = redact(held.secrets, result, &mut trace);
    let outcome = match result {
        Ok(resp) => Ok(Output::response(resp)),
        Err(FetchFailure::Denied(d)) => Err(Failure::Denied(d)),
        Err(FetchFailure::Timeout) => Err(Failure::Denied(Denial::new(
            Violation::MaxWall,
            format!(
                "fetch ran past the {} ms left of the wall budget",
                timeout.as_millis()
            ),
        ))),
        Err(FetchFailure::Cancelled) => Err(Failure::Denied(Denial::new(
            Violation::Cancelled,
            "the run was cancelled during the fetch",
        ))),
        Err(FetchFailure::BodyTooLarge) => Err(Failure::Denied((lent.over_budget)())),
        Err(FetchFailure::Failed(e)) => Err(Failure::Error(OpError::new(ErrorKind::Network, e))),
        Err(FetchFailure::TimedOut(e)) => Err(Failure::Error(OpError::new(ErrorKind::TimedOut, e))),
    };
    (outcome, trace)
}

/// Echo protection: every copy of a secret's value in what goes back to
/// the guest (status text, headers, body, an error message) becomes its
/// placeholder, and the trace says whose.
fn redact(
    secrets: &super::RunSecrets,
    result: Result<super::FetchResponse, FetchFailure>,
    trace: &mut Trace,
) -> Result<super::FetchResponse, FetchFailure> {
    if secrets.is_empty() {
        return result;
    }
    let mut found = Vec::new();
    let result = match result {
        Ok(mut resp) => {
            for (k, v) in resp.headers.iter_mut() {
                found.extend(secrets.redact_text(k));
                found.extend(secrets.redact_text(v));
            }
            found.extend(secrets.redact(&mut resp.body));
            Ok(resp)
        }
        Err(FetchFailure::Failed(mut e)) => {
            found.extend(secrets.redact_text(&mut e));
            Err(FetchFailure::Failed(e))
        }
        Err(FetchFailure::Denied(mut d)) => {
            found.extend(secrets.redact_text(&mut d.message));
            Err(FetchFailure::Denied(d))
        }
        other => other,
    };
    found.sort();
    found.dedup();
    for name in found {
        trace.secret_notes.push(format!(
            "echo of secret {name} in the response replaced by its placeholder"
        ));
    }
    result
}
