//! The flow check (`crate::flow`) in the gate: which sink an allowed op
//! sends to and which labels it brings in, the refusal before anything
//! leaves, the mark raised after, and the refusals of the streams that do
//! not pass the gate call by call, recorded.

use super::Sandbox;
use crate::bound::record_target;
use crate::capability::{OpKind, Permit, Trace};
use crate::flow::{Sink, Source};
use crate::op::{Failure, Op, Output};
use crate::violation::Denial;

/// What an op sends, in parts: a request's URL, header values and body; a
/// tool's input; a file's content.
fn sent(op: &Op) -> Vec<&[u8]> {
    match op {
        Op::Net(r) => {
            let mut parts = vec![r.url.as_bytes(), r.body.as_slice()];
            parts.extend(r.headers.iter().map(|(_, v)| v.as_bytes()));
            parts
        }
        Op::Tool(call) => vec![call.input.as_bytes()],
        Op::Socket(s) if s.reaches_peer() => vec![op.target().as_bytes()],
        Op::Fs(crate::fs::FsOp::Write { content, .. }) => vec![content.as_slice()],
        _ => Vec::new(),
    }
}

/// Labels an op brings in, each with what brought it.
pub(super) type Incoming = Vec<(String, String)>;

impl Sandbox {
    /// The check of an op the capability check allowed, under the rule
    /// `rule` (as the capability found it): refused when it would send to a
    /// sink the run's mark does not let it reach, or, when its result goes
    /// back to the caller (a plan), when what it brings in may not reach
    /// `stdout`. `Ok` is what it brings in, for [`Sandbox::flow_raise`].
    pub(super) fn flow_check(
        &mut self,
        op: &Op,
        permit: &Permit,
        rule: &str,
        admitted: bool,
    ) -> Result<Incoming, Denial> {
        if !self.flow.tracks() {
            return Ok(Vec::new());
        }
        if let Some(sink) = self.sink(op, permit, rule) {
            self.evidence = self.flow.evidence_in(&sent(op));
            self.flow.check(&sink, &[], true)?;
        }
        let incoming: Incoming = self
            .source(op, permit, rule, admitted)
            .and_then(|s| self.flow.policy().label_of(&s))
            .map(|l| vec![(l.to_string(), self.origin(op))])
            .unwrap_or_default();
        if self.results_to_caller && !admitted && !incoming.is_empty() {
            // A plan's op result is the caller's to read: only its own
            // labels decide (the caller sees nothing else the run read).
            self.flow.check(&Sink::Stdout, &incoming, false)?;
        }
        Ok(incoming)
    }

    /// Fingerprint what an allowed op brought in (its content, response
    /// or result), under each label it brought, when the grant asks for
    /// evidence.
    pub(super) fn flow_fingerprint(&self, out: &Output) {
        if self.brought.is_empty() || !self.flow.policy().evidence() {
            return;
        }
        let bytes: &[u8] = match out {
            Output::Data { content } => &content.0,
            Output::Response { body, .. } => &body.0,
            Output::ToolOutput { output } => output.as_bytes(),
            _ => return,
        };
        for label in &self.brought {
            self.flow.fingerprint(label, bytes);
        }
    }

    /// Raise the mark by what an allowed op brought in, and by what its
    /// effect turned out to reach (a redirect's last rule, the secrets a
    /// request carried).
    pub(super) fn flow_raise(&mut self, op: &Op, incoming: Incoming, trace: &Trace) {
        if !self.flow.tracks() {
            return;
        }
        for (label, from) in incoming {
            self.flow.raise(&label, from);
            self.brought.push(label);
        }
        let policy = self.flow.policy();
        let mut late: Vec<String> = Vec::new();
        if let Some(rule) = &trace.rule
            && let Some(l) = policy.label_of(&Source::Egress(rule.clone()))
        {
            late.push(l.to_string());
        }
        late.extend(trace.secrets.iter().filter_map(|s| policy.secret(s)));
        for label in late {
            self.flow.raise(&label, self.origin(op));
            if !self.brought.contains(&label) {
                self.brought.push(label);
            }
        }
    }

    /// The flow decision of an op the capability check allowed, as
    /// `policy what-if` re-makes it: refused, or allowed and the mark
    /// raised by what it brings in (no effect performed).
    pub(crate) fn flow_decide(&mut self, op: &Op, permit: &Permit) -> Result<(), Denial> {
        let incoming = self.flow_check(op, permit, permit.rule(), false)?;
        self.flow_raise(op, incoming, &Trace::default());
        self.brought.clear();
        Ok(())
    }

    /// The sink `op` sends to under `permit`, if it sends anywhere. A
    /// mount private to the run is not a sink (what is written there ends
    /// with the run, and the run's mark already covers reading it back).
    fn sink(&self, op: &Op, permit: &Permit, rule: &str) -> Option<Sink> {
        match op {
            Op::Fs(_) if op.op_kind().is_some_and(OpKind::writes) && permit.writes() => {
                let (mount, _) = self.mounts.reached(permit)?;
                (!mount.mount().private).then(|| Sink::Mount(mount.mount().guest.to_string()))
            }
            Op::Net(_) => Some(Sink::Egress(rule.to_string())),
            // A connection sends what the guest writes to it, unseen by
            // the gate: decided as a sink when it opens.
            Op::Socket(s) if s.reaches_peer() => Some(Sink::Egress(rule.to_string())),
            Op::Tool(call) => Some(Sink::Tool(call.name.clone())),
            Op::Kv(_) if op.op_kind().is_some_and(OpKind::writes) => Some(Sink::Kv),
            _ => None,
        }
    }

    /// The source `op` reads from, if it reads anything a label may be on.
    /// A file opened through WASI (`admitted`) may be read whatever the
    /// open was for.
    fn source(&self, op: &Op, permit: &Permit, rule: &str, admitted: bool) -> Option<Source> {
        match op {
            Op::Fs(_) if admitted || !op.op_kind().is_some_and(OpKind::writes) => {
                let (mount, _) = self.mounts.reached(permit)?;
                Some(Source::Mount(mount.mount().guest.to_string()))
            }
            Op::Net(_) => Some(Source::Egress(rule.to_string())),
            Op::Socket(s) if s.reaches_peer() => Some(Source::Egress(rule.to_string())),
            Op::Tool(call) => Some(Source::Tool(call.name.clone())),
            _ => None,
        }
    }

    /// `fs_read /data/c.csv at op 3`: what brought a label in.
    fn origin(&self, op: &Op) -> String {
        format!(
            "{} {} at op {}",
            op.kind(),
            record_target(op.target()),
            self.seq
        )
    }

    /// Record the writes the streams refused since the last op (a guest's
    /// stdout, its file output streams), each as a denial of its own.
    pub(super) fn record_stream_refusals(&mut self) {
        if !self.flow.tracks() {
            return;
        }
        for r in self.flow.take_pending() {
            // The flow state names the op as a plain name (it depends on
            // no capability type); the record names it as an OpName.
            let kind = crate::OpName::from_name(r.kind).unwrap_or(crate::OpName::Invalid);
            self.record_refusal(kind, &r.target, r.denial);
        }
    }

    /// Record a refusal of an effect performed outside the gate (`kind`
    /// aimed at `target`), as an op of its own.
    pub(super) fn record_refusal(&mut self, kind: crate::OpName, target: &str, d: Denial) {
        self.seq += 1;
        let op = Op::Invalid {
            op: kind.as_str().to_string(),
            reason: String::new(),
        };
        self.finish(op, None, Err(Failure::Denied(d)));
        // Named as the effect it stopped, not as the placeholder op.
        let target = record_target(target);
        if let Some(ev) = self.audit.last_mut() {
            ev.op = kind;
            ev.target = target.clone();
        }
        if let Some(ev) = self.audit.last() {
            self.announce(&ev.clone());
        }
        if let Some(rec) = self.denials.last_mut() {
            rec.op = kind;
            rec.target = target;
        }
    }
}
