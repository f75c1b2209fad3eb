//! The capability check: which rule allows an op, or the denial. Pure: no
//! budget charged, nothing touched. Each capability decides its own
//! requests (`capability::fs`, `net`, `tools`); the op hands itself to its
//! capability ([`Op::request`](crate::Op)).

use super::Sandbox;
use crate::capability::{Held, Permit};
use crate::op::Op;
use crate::violation::Denial;

impl Sandbox {
    /// Decide whether the grant allows `op`, without charging budgets or
    /// performing anything. The permit names the rule that allows it
    /// ([`Permit::rule`]). This is the same check [`Sandbox::run`] applies,
    /// request bounds included.
    pub fn check(&self, op: &Op) -> Result<Permit, Denial> {
        op.check(&self.held())
    }

    /// Time on the injected clock since the run started (one reading).
    pub(crate) fn elapsed_now(&self) -> std::time::Duration {
        self.clock.now().saturating_sub(self.start)
    }

    /// The grant and the handles opened for it, as capabilities see them.
    pub(crate) fn held(&self) -> Held<'_> {
        Held {
            mounts: &self.mounts,
            // Widened by what the run's approver approved ([ask]), if
            // anything: only this run's view, never the grant.
            egress: self.asked.egress.as_ref().unwrap_or(self.caps.egress()),
            allowed_tools: self.asked.tools.as_ref().unwrap_or(self.caps.tools()),
            tools: &self.services.tools,
            resolver: &*self.services.resolver,
            net: &self.services.net,
            kv_grant: self.caps.kv(),
            kv: &*self.services.kv,
            cancel: self.cancel.as_ref(),
            secrets: &self.secrets,
            flow: &self.flow,
            results_to_caller: self.results_to_caller,
        }
    }

    /// The check of a file op performed through a descriptor of the mount
    /// at guest path `via` (the WASI door); other ops as [`Sandbox::check`].
    pub(super) fn check_via(&self, op: &Op, via: &str) -> Result<Permit, Denial> {
        match op {
            Op::Fs(r) => self.mounts.check_via(r, via),
            _ => self.check(op),
        }
    }
}
