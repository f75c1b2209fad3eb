//! For a door that performs effects itself (the wasm host lets WASI perform
//! file calls through its preopens): admit an op through a given mount,
//! turn an admitted op into the refusal it became, charge the write quota
//! for effects the gate did not perform.

use super::{Failure, Mode, Sandbox};
use crate::budget::WriteMeter;
use crate::capability::Permit;
use crate::fs::{MountTable, OpenMount, check_path};
use crate::op::Op;
use crate::replay::{Recorder, Tape};
use crate::violation::Denial;
use std::sync::Arc;

impl Sandbox {
    /// What the mount at guest path `via` allows, or `None` when no mount
    /// is there (the empty root).
    pub(crate) fn mount_access(&self, via: &str) -> Option<crate::fs::Access> {
        self.mounts.by_guest(via).map(|m| m.mount().access)
    }

    /// The folder of the mount at guest path `via`, as the gate holds it,
    /// for WASI to be lent the same handle (`wasm/root.rs`); an error when
    /// the folder was removed and its path leads to none the grant could
    /// name.
    #[cfg(feature = "wasm")]
    pub(crate) fn mount_folder(&self, via: &str) -> Option<std::io::Result<Arc<std::fs::File>>> {
        self.mounts.by_guest(via).map(|m| m.folder_file())
    }

    /// Whether the run replays a recording: its answers come from the
    /// tape, and a door whose effect happens outside the gate (a socket's
    /// connection) must not perform it.
    #[cfg(feature = "wasm")]
    pub(crate) fn replaying(&self) -> bool {
        matches!(self.tape, Some(crate::replay::Tape::Replay(_)))
    }

    /// A read through a script runner's own mount at `via`
    /// ([`Mount::runner`](crate::fs::Mount::runner)): `None` when `via` is
    /// not one or `op` is not a read (those go through
    /// [`Sandbox::admit_via`]); else the check's answer, with nothing
    /// charged or recorded. A halted or cancelled run reads nothing more.
    pub(crate) fn admit_runner_read(
        &mut self,
        op: &Op,
        via: &str,
    ) -> Option<Result<Permit, Denial>> {
        let read = matches!(op, Op::Fs(r) if r.access() == crate::fs::Access::ReadOnly);
        if !read || !self.mounts.runner_at(via) || self.halted.is_some() || self.cancelled() {
            return None;
        }
        Some(self.check_via(op, via))
    }

    /// [`Sandbox::admit`] for an op performed through a descriptor of the
    /// mount at guest path `via`. `Ok` is the op's sequence number, for
    /// [`Sandbox::refuse_admitted`] should the effect then be refused, and
    /// its permit: the mount it goes through and the path below it, which
    /// the escape check and the recording then ask.
    pub(crate) fn admit_via(&mut self, op: Op, via: &str) -> Result<(u64, Permit), Denial> {
        let r = self.run_with(op, Mode::Admit(Some(via)));
        match (r.outcome, r.permit) {
            (Err(Failure::Denied(d)), _) => Err(d),
            (_, Some(permit)) => Ok((r.seq, permit)),
            (_, None) => Err(Denial::new(
                crate::Violation::InvalidRequest,
                "an admitted op without a permit",
            )),
        }
    }

    /// Record that admitted op `seq` was refused after all (the file layer
    /// refused it as an escape, or its effect would pass a quota): the
    /// audit then says what happened (a denial), not `allowed`. A hard
    /// refusal halts the run.
    pub(crate) fn refuse_admitted(&mut self, seq: u64, denial: Denial) {
        let Some(event) = self.audit.iter_mut().rev().find(|e| e.seq == seq) else {
            // No record to amend (not expected): a hard refusal still halts.
            self.trip(&denial);
            return;
        };
        event.decision = crate::report::Decision::Denied;
        event.violation = Some(denial.violation);
        event.hard = denial.hard;
        event.detail = Some(denial.message.clone());
        let (op, target) = (event.op, event.target.clone());
        let amended = event.clone();
        self.announce(&amended);
        self.record_denial(seq, op, &target, &denial);
        self.denials.sort_by_key(|d| d.seq);
    }

    /// Whether the path `permit` names leads outside its mount through a
    /// symbolic link (the one escape check, `OpenMount::escapes`).
    pub(crate) fn escapes(&self, permit: &Permit) -> bool {
        self.mounts
            .reached(permit)
            .is_some_and(|(mount, rel)| mount.escapes(rel))
    }

    /// The run's label mark, for writes that do not pass the gate call by
    /// call (WASI file output streams).
    pub(crate) fn flow_state(&self) -> Arc<crate::flow::FlowState> {
        self.flow.clone()
    }

    /// The flow sink of a write through a descriptor of the mount at guest
    /// path `via`: the mount, unless it is private to the run (or the
    /// grant labels nothing).
    pub(crate) fn mount_sink(&self, via: &str) -> Option<crate::flow::Sink> {
        if !self.flow.tracks() {
            return None;
        }
        let m = self.mounts.by_guest(via)?;
        (!m.mount().private).then(|| crate::flow::Sink::Mount(m.mount().guest.to_string()))
    }

    /// The label of the mount at guest path `via`, when the grant asks for
    /// the flow rules' evidence (reads through it are fingerprinted).
    pub(crate) fn evidence_label(&self, via: &str) -> Option<String> {
        let policy = self.flow.policy();
        if !policy.evidence() {
            return None;
        }
        let m = self.mounts.by_guest(via)?;
        let source = crate::flow::Source::Mount(m.mount().guest.to_string());
        policy.label_of(&source).map(str::to_string)
    }

    /// The write quota's meter, for writes that do not pass the gate call by
    /// call (WASI file output streams).
    pub(crate) fn write_meter(&self) -> Arc<WriteMeter> {
        self.writes.clone()
    }

    /// Charge the write quota for an effect performed elsewhere (WASI):
    /// `bytes` written, `files` created. Over the quota, the run halts and
    /// the refusal is recorded against `target`.
    /// When the effect belongs to an admitted op (`admitted` is its
    /// sequence number), that op's record becomes the refusal.
    pub(crate) fn charge_writes(
        &mut self,
        kind: crate::OpName,
        target: &str,
        (bytes, files): (u64, u64),
        admitted: Option<u64>,
    ) -> Result<(), Denial> {
        let Err(d) = self.quota(bytes, files) else {
            return Ok(());
        };
        if let Some(seq) = admitted {
            self.refuse_admitted(seq, d.clone());
            return Err(d);
        }
        self.record_refusal(kind, target, d.clone());
        Err(d)
    }

    /// When recording: keep the path `permit` names as it is before the
    /// effect, the first time the guest meets it.
    pub(crate) fn sight(&mut self, permit: &Permit) {
        let Some(Tape::Record(rec)) = &mut self.tape else {
            return;
        };
        if let Some((mount, rel)) = self.mounts.reached(permit) {
            rec.sight(mount, rel);
        }
    }

    /// When recording: keep folder `guest`'s entries, the first time the
    /// guest lists it.
    pub(crate) fn sight_listing(&mut self, via: &str, guest: &str) {
        let Some(Tape::Record(rec)) = &mut self.tape else {
            return;
        };
        if let Some((mount, rel)) = below(&self.mounts, via, guest) {
            rec.listing(mount, &rel);
        }
    }

    /// The recorder, when the run was recorded (taken at its end).
    pub(crate) fn take_recorder(&mut self) -> Option<Recorder> {
        match self.tape.take() {
            Some(Tape::Record(rec)) => Some(*rec),
            other => {
                self.tape = other;
                None
            }
        }
    }
}

/// The mount at `via` and `guest`'s path below it.
fn below<'a>(mounts: &'a MountTable, via: &str, guest: &str) -> Option<(&'a OpenMount, String)> {
    let mount = mounts.by_guest(via)?;
    let path = check_path(guest).ok()?;
    let rel = path.strip_base(&mount.mount().guest)?;
    Some((mount, rel))
}
