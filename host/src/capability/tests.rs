//! What every capability's own tests share: a [`Rig`] that holds a grant
//! and its handles the way the gate does, so a capability's check, permit
//! and effect are exercised without the gate's pipeline and without
//! wasmtime (each capability's `tests.rs` beside its code).

use super::{Held, Lent, Op, Output, Permit};
use crate::caps::Capabilities;
use crate::failure::Failure;
use crate::fs::MountTable;
use crate::net::RunSecrets;
use crate::services::Services;
use crate::violation::{Denial, Violation};
use std::time::Duration;

/// A grant, its open mounts and its backends.
pub(crate) struct Rig {
    pub(crate) caps: Capabilities,
    mounts: MountTable,
    services: Services,
    secrets: RunSecrets,
}

impl Rig {
    pub(crate) fn new(caps: Capabilities, services: Services) -> Rig {
        let mounts = MountTable::open(caps.mounts()).expect("the mounts open");
        let secrets = RunSecrets::bind(caps.secrets(), Some(1));
        Rig {
            caps,
            mounts,
            services,
            secrets,
        }
    }

    fn held(&self) -> Held<'_> {
        Held {
            mounts: &self.mounts,
            egress: self.caps.egress(),
            allowed_tools: self.caps.tools(),
            tools: &self.services.tools,
            resolver: &*self.services.resolver,
            net: &self.services.net,
            kv_grant: self.caps.kv(),
            kv: &*self.services.kv,
            cancel: None,
            secrets: &self.secrets,
        }
    }

    /// The capability's check of `op`.
    pub(crate) fn check(&self, op: &Op) -> Result<Permit, Denial> {
        op.check(&self.held())
    }

    /// The capability's effect for `op` under `permit`, with a second of
    /// wall and a MiB of output lent, and no write quota.
    pub(crate) fn perform(&self, op: &Op, permit: Permit) -> Result<Output, Failure> {
        let quota = |_: u64, _: u64| Ok(());
        let over = || Denial::new(Violation::MaxOutputBytes, "over the output budget");
        let lent = Lent {
            wall_left: Duration::from_secs(1),
            output_left: 1 << 20,
            quota: &quota,
            over_budget: &over,
        };
        let request = op.request().expect("a capability's op");
        request.perform(permit, &self.held(), &lent).0
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
