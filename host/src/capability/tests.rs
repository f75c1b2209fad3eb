//! What every capability's own tests share: a [`Rig`] that holds a grant
//! and its handles the way the gate does, so a capability's check, permit
//! and effect are exercised without the gate's pipeline and without
//! wasmtime (each capability's `tests.rs` beside its code).

use super::{Lent, Op, Output, Permit};
use crate::caps::Capabilities;
use crate::failure::Failure;
use crate::gate::Sandbox;
use crate::services::Services;
use crate::violation::{Denial, Violation};
use std::time::Duration;

/// A grant, its open mounts and its backends: a sandbox, whose `Held` the
/// capabilities are handed directly, without the pipeline around them.
pub(crate) struct Rig {
    sandbox: Sandbox,
}

impl Rig {
    pub(crate) fn new(caps: Capabilities, services: Services) -> Rig {
        let sandbox = Sandbox::builder(caps).services(services).build();
        Rig {
            sandbox: sandbox.expect("the mounts open"),
        }
    }

    /// The capability's check of `op`.
    pub(crate) fn check(&self, op: &Op) -> Result<Permit, Denial> {
        self.sandbox.check(op)
    }

    /// The capability's effect for `op` under `permit`, with a second of
    /// wall and a MiB of output lent, and no write quota or sent budget.
    pub(crate) fn perform(&self, op: &Op, permit: Permit) -> Result<Output, Failure> {
        let quota = |_: u64, _: u64| Ok(());
        let over = || Denial::new(Violation::MaxOutputBytes, "over the output budget");
        let sent = |_: u64| Ok(());
        let lent = Lent {
            sent: &sent,
            wall_left: Duration::from_secs(1),
            output_left: 1 << 20,
            quota: &quota,
            over_budget: &over,
        };
        let request = op.request().expect("a capability's op");
        request.perform(permit, &self.sandbox.held(), &lent).0
    }

    /// Check, then perform what the check allowed.
    pub(crate) fn run(&self, op: &Op) -> Result<Result<Output, Failure>, Denial> {
        let permit = self.check(op)?;
        Ok(self.perform(op, permit))
    }
}

/// The violation of a check that must deny.
pub(crate) fn denied(r: Result<Permit, Denial>) -> Violation {
    match r {
        Err(d) => d.violation,
        Ok(p) => panic!("allowed by {}, expected a denial", p.rule()),
    }
}
