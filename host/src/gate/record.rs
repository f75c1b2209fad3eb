//! Records: every decision becomes one audit event (and a denial record
//! when refused), with a bounded target; a hard denial trips the breaker.

use super::{Failure, Sandbox};
use crate::OpName;
use crate::bound::record_target_owned;
use crate::capability::Trace;
use crate::events::Event;
use crate::op::{Op, Output, SandboxResult};
use crate::report::{AuditEvent, Decision, DenialRecord};
use crate::violation::Denial;

/// What the gate decided for one op: its sequence number and outcome. The
/// op, target and rule live in the op's audit record; [`Sandbox::run`]
/// copies them into the public [`SandboxResult`], a door that needs only the
/// outcome (the wasm imports) takes this as it is and copies nothing.
pub(crate) struct Decided {
    pub(crate) seq: u64,
    pub(crate) outcome: Result<Output, Failure>,
    /// For an op admitted for someone else to perform (WASI), its permit:
    /// what that effect may reach, as the check found it.
    pub(crate) permit: Option<crate::capability::Permit>,
}

impl Sandbox {
    pub(super) fn finish(
        &mut self,
        op: Op,
        rule: Option<String>,
        outcome: Result<Output, Failure>,
    ) -> Decided {
        self.finish_traced(op, rule, outcome, &Trace::default())
    }

    pub(super) fn finish_traced(
        &mut self,
        op: Op,
        rule: Option<String>,
        outcome: Result<Output, Failure>,
        trace: &Trace,
    ) -> Decided {
        // Records keep a bounded target, whatever the guest passed; the op
        // is done with, so its target moves into the record when it fits.
        let name = op.name();
        let mut event = AuditEvent {
            seq: self.seq,
            op: name,
            target: record_target_owned(op.into_target()),
            decision: Decision::Allowed,
            violation: None,
            hard: false,
            rule,
            bytes: 0,
            address: trace.address.map(|a| a.to_string()),
            status: trace.status,
            redirects: (trace.redirects > 0).then_some(trace.redirects),
            secrets: trace.secrets.clone(),
            labels: std::mem::take(&mut self.brought),
            evidence: self.evidence.take(),
            detail: trace_detail(trace),
            elapsed_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        };
        match &outcome {
            Ok(out) => event.bytes = out.charged_bytes(),
            Err(Failure::Error(e)) => {
                event.detail = Some(with_detail(&e.message, event.detail.take()));
            }
            Err(Failure::Denied(d)) => {
                // "denied" means not performed: a budget or cancel that cut
                // an effect short once it had begun is `interrupted`.
                let begun = trace.begun.as_ref().filter(|_| d.hard);
                event.decision = match begun {
                    Some(_) => Decision::Interrupted,
                    None => Decision::Denied,
                };
                event.violation = Some(d.violation);
                event.hard = d.hard;
                // A fetch halted after its connection keeps the rule that
                // let it connect (and the address, above).
                let mut detail = with_detail(&d.message, event.detail.take());
                if let Some(how_far) = begun {
                    detail = format!("{detail}; interrupted: {how_far}");
                }
                event.detail = Some(detail);
                self.record_denial(self.seq, event.op, &event.target, d);
            }
        }
        self.announce(&event);
        self.audit.push(event);
        Decided {
            seq: self.seq,
            outcome,
            permit: None,
        }
    }

    /// `decided` as the public result, its op, target and rule read from
    /// its audit record (the last one: nothing is recorded in between).
    pub(super) fn dress(&self, decided: Decided) -> SandboxResult {
        let event = self.audit.last().filter(|e| e.seq == decided.seq);
        let (op, target, rule) = event.map_or((OpName::Invalid, String::new(), None), |e| {
            (e.op, e.target.clone(), e.rule.clone())
        });
        let mut result = SandboxResult {
            seq: decided.seq,
            op,
            target,
            ok: false,
            rule: None,
            output: None,
            denial: None,
            error: None,
        };
        match decided.outcome {
            Ok(out) => {
                result.ok = true;
                result.rule = rule;
                result.output = Some(out);
            }
            Err(Failure::Error(e)) => {
                result.rule = rule;
                result.error = Some(e);
            }
            Err(Failure::Denied(d)) => result.denial = Some(d),
        }
        result
    }

    /// Send a decision to the run's event sink, if it has one (again, with
    /// the same `seq`, when a record is amended: the later one stands).
    pub(super) fn announce(&self, event: &AuditEvent) {
        if let Some(sink) = &self.events {
            sink.send(Event::Decision(event.clone()));
        }
    }

    /// The one place the breaker trips: any hard denial halts the run.
    pub(super) fn trip(&mut self, d: &Denial) {
        if d.hard && self.halted.is_none() {
            self.halted = Some(d.clone());
        }
    }

    /// List a refusal for the report (and trip the breaker if it is hard).
    pub(super) fn record_denial(&mut self, seq: u64, op: OpName, target: &str, d: &Denial) {
        self.trip(d);
        self.denials.push(DenialRecord {
            seq,
            op,
            target: target.to_string(),
            violation: d.violation,
            hard: d.hard,
        });
    }
}

/// `message`, then what the trace already said (dropped headers), if any.
fn with_detail(message: &str, earlier: Option<String>) -> String {
    match earlier {
        Some(e) => format!("{message}; {e}"),
        None => message.to_string(),
    }
}

/// What a fetch's trace adds to its record: headers dropped at an origin
/// change, placeholders left as they were, echoes taken out.
fn trace_detail(trace: &Trace) -> Option<String> {
    let mut parts = Vec::new();
    if !trace.dropped_headers.is_empty() {
        parts.push(format!(
            "headers dropped at a cross-origin redirect: {}",
            trace.dropped_headers.join(", ")
        ));
    }
    parts.extend(trace.secret_notes.iter().cloned());
    (!parts.is_empty()).then(|| parts.join("; "))
}
