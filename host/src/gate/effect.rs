//! Effects: what an allowed op does, within what is left of the budgets.
//! Each capability's effect lives in its folder; this lends it the budgets
//! (time and output left, the write quota) and hands the op over.

use super::Sandbox;
use crate::capability::Trace;
use crate::capability::{Lent, Permit};
use crate::op::{Failure, Op, Output};
use crate::violation::{Denial, Violation};
use std::time::Duration;

impl Sandbox {
    /// Charge the write quota, or say which part of it is spent.
    pub(super) fn quota(&self, bytes: u64, files: u64) -> Result<(), Denial> {
        let b = self.caps.budget();
        if bytes > 0 && !self.writes.try_bytes(bytes) {
            return Err(Denial::new(
                Violation::MaxWriteBytes,
                format!(
                    "writing {bytes} bytes would pass max_write_bytes = {} ({} written)",
                    b.max_write_bytes,
                    self.writes.bytes()
                ),
            ));
        }
        if files > 0 && !self.writes.try_files(files) {
            return Err(Denial::new(
                Violation::MaxFiles,
                format!(
                    "creating {files} more would pass max_files = {} ({} created)",
                    b.max_files,
                    self.writes.files()
                ),
            ));
        }
        Ok(())
    }

    /// Charge `bytes` about to be sent to the network, or say that
    /// `max_sent_bytes` is spent (nothing charged).
    pub(super) fn charge_sent(&self, bytes: u64) -> Result<(), Denial> {
        if self.sent.try_charge(bytes) {
            return Ok(());
        }
        Err(Denial::new(
            Violation::MaxSentBytes,
            format!(
                "sending {bytes} bytes would pass max_sent_bytes = {} ({} sent)",
                self.caps.budget().max_sent_bytes,
                self.sent.used()
            ),
        ))
    }

    pub(super) fn output_left(&self) -> u64 {
        self.output.left()
    }

    pub(super) fn wall_left(&self) -> Duration {
        self.caps.budget().max_wall.saturating_sub(self.elapsed)
    }

    pub(super) fn output_denial(&self, wanted: u64) -> Denial {
        self.output.mark_breached();
        let size = if wanted == u64::MAX {
            "the result is larger than".to_string()
        } else {
            format!("the result is {wanted} bytes, over")
        };
        Denial::new(
            Violation::MaxOutputBytes,
            format!(
                "{size} the {} bytes left of max_output_bytes = {}",
                self.output_left(),
                self.caps.budget().max_output_bytes
            ),
        )
    }

    /// Perform an allowed op: its capability's effect, reaching what its
    /// permit names, with the budgets lent to it.
    pub(super) fn perform(&self, op: &Op, permit: Permit) -> (Result<Output, Failure>, Trace) {
        let Some(request) = op.request() else {
            let d = Denial::new(Violation::InvalidRequest, "not a capability request");
            return (Err(Failure::Denied(d)), Trace::default());
        };
        let over_budget = || self.output_denial(u64::MAX);
        let quota = |bytes, files| self.quota(bytes, files);
        let sent = |bytes| self.charge_sent(bytes);
        let lent = Lent {
            sent: &sent,
            wall_left: self.wall_left(),
            output_left: self.output_left(),
            quota: &quota,
            over_budget: &over_budget,
        };
        request.perform(permit, &self.held(), &lent)
    }
}
