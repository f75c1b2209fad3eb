//! The network capability's effect: one gated fetch (resolve once, check
//! every address, dial a checked one, redirects decided hop by hop) within
//! the time and output the gate lends.

use super::{
    Egress, FetchFailure, FetchLimits, FetchRequest, FetchTrace, Net, Resolve, gated_fetch,
};
use crate::op::{ErrorKind, Failure, OpError, Output};
use crate::violation::{Denial, Violation};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Fetch `req` under `egress`, within `limits`; `over_budget` is the
/// refusal of a response over the output budget.
pub(crate) fn fetch(
    egress: &Egress,
    resolver: &dyn Resolve,
    net: &dyn Net,
    req: FetchRequest,
    limits: FetchLimits,
    over_budget: &dyn Fn() -> Denial,
) -> (Result<Output, Failure>, FetchTrace) {
    let run = || {
        gated_fetch(
            egress,
            resolver,
            net,
            req,
            limits.timeout,
            limits.max_response_bytes,
        )
    };
    let (result, trace) = match catch_unwind(AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(_) => (
            Err(FetchFailure::Failed("the network layer panicked".into())),
            FetchTrace::default(),
        ),
    };
    let outcome = match result {
        Ok(resp) => Ok(Output::response(resp)),
        Err(FetchFailure::Denied(d)) => Err(Failure::Denied(d)),
        Err(FetchFailure::Timeout) => Err(Failure::Denied(Denial::new(
            Violation::MaxWall,
            format!(
                "fetch ran past the {} ms left of the wall budget",
                limits.timeout.as_millis()
            ),
        ))),
        Err(FetchFailure::BodyTooLarge) => Err(Failure::Denied(over_budget())),
        Err(FetchFailure::Failed(e)) => Err(Failure::Error(OpError::new(ErrorKind::Network, e))),
    };
    (outcome, trace)
}
