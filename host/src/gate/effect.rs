//! Effects: what an allowed op does, through the mount handles, the
//! network seam and the tool registry, within what is left of the budgets.

//! (Each capability's effect lives in its folder; this is the dispatch and
//! the budgets lent to them.)

use super::Sandbox;
use crate::fs::Lent;
use crate::net::{FetchLimits, FetchRequest, FetchTrace, fetch};
use crate::op::{ErrorKind, Failure, Op, OpError, Output};
use crate::tools::{ToolLimits, call};
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

    pub(super) fn output_left(&self) -> u64 {
        self.output.left()
    }

    pub(super) fn wall_left(&self) -> Duration {
        self.caps.budget().max_wall.saturating_sub(self.elapsed)
    }

    pub(super) fn output_denial(&self, wanted: u64) -> Denial {
        self.output.mark_breached();
        let more = if wanted == u64::MAX {
            "more than".to_string()
        } else {
            format!("{wanted} bytes,")
        };
        Denial::new(
            Violation::MaxOutputBytes,
            format!(
                "the result is {more} over the {} bytes left of max_output_bytes = {}",
                self.output_left(),
                self.caps.budget().max_output_bytes
            ),
        )
    }

    /// Perform an allowed op: each capability's effect, with the budgets
    /// lent to it.
    pub(super) fn perform(&self, op: &Op) -> (Result<Output, Failure>, FetchTrace) {
        let over_budget = || self.output_denial(u64::MAX);
        let outcome = match op {
            Op::NetFetch {
                method,
                url,
                headers,
                body,
            } => {
                let req = FetchRequest {
                    method: method.to_string(),
                    url: url.to_string(),
                    headers: headers.to_vec(),
                    body: body.to_vec(),
                };
                let limits = FetchLimits {
                    timeout: self.wall_left(),
                    max_response_bytes: self.output_left(),
                };
                let (egress, resolver, net) = (self.caps.egress(), &*self.resolver, &*self.net);
                return fetch(egress, resolver, net, req, limits, &over_budget);
            }
            Op::ToolCall { name, input } => {
                let limits = ToolLimits {
                    timeout: self.wall_left(),
                    max_output_bytes: self.output_left(),
                };
                call(&self.tools, name, input, limits)
            }
            Op::Invalid { reason, .. } => Err(Failure::Denied(Denial::new(
                Violation::InvalidRequest,
                reason.clone(),
            ))),
            _ => self.perform_fs(op, &over_budget),
        };
        (outcome, FetchTrace::default())
    }

    fn perform_fs(&self, op: &Op, over_budget: &dyn Fn() -> Denial) -> Result<Output, Failure> {
        let Some((raw, access)) = super::check::fs_request(op) else {
            return Err(Failure::Error(OpError::new(
                ErrorKind::Io,
                "not a filesystem op",
            )));
        };
        // Checked already; resolving again (pure, cheap) gives the handle.
        let (mount, rel) = self.resolve(raw, access).map_err(Failure::Denied)?;
        let quota = |bytes, files| self.quota(bytes, files);
        let lent = Lent {
            read_limit: self.output_left(),
            quota: &quota,
            over_budget,
        };
        mount.perform(op, &rel, raw, access, &lent)
    }
}
