//! What another grant would have decided for every op of a recorded run.

use crate::Services;
use crate::capability::op_aimed_at;
use crate::caps::Capabilities;
use crate::error::Error;
use crate::flow::{FlowState, Mark};
use crate::gate::Sandbox;
use crate::report::{AuditEvent, Decision};
use crate::violation::Violation;
use serde::Serialize;
use std::sync::Arc;

/// One decision, recorded or re-made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Verdict {
    /// Allowed.
    Allowed {
        /// The rule that allows it.
        rule: String,
    },
    /// Denied.
    Denied {
        /// Why.
        violation: Violation,
    },
}

/// An op whose decision differs under the other grant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flip {
    /// The op's sequence number in the run.
    pub seq: u64,
    /// Its name (`fs_read`, ...).
    pub op: String,
    /// Its path, URL or tool name, as recorded.
    pub target: String,
    /// What the run's grant decided.
    pub was: Verdict,
    /// What the other grant decides.
    pub now: Verdict,
}

/// An op not decided again, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The op's sequence number in the run.
    pub seq: u64,
    /// Its name.
    pub op: String,
    /// Why it was not decided again.
    pub reason: String,
}

/// The outcome of [`what_if`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WhatIf {
    /// Decisions that change, in order.
    pub flips: Vec<Flip>,
    /// Decisions that stay the same.
    pub unchanged: usize,
    /// Ops not decided again (budget halts, malformed ops, cut targets).
    pub skipped: Vec<Skipped>,
}

/// Decide every op of `audit` again under `caps`, with the capability
/// check and the flow rules: no effect, no budget, fetches by the egress
/// rules (no lookup). The flow rules are decided as a guest's ops are:
/// each op allowed again raises the run's mark by the labels `caps` puts
/// on what it reads, and a later send is checked against that mark.
/// Budget halts and `invalid_request` are not capability decisions and
/// are skipped, as are targets the record had to cut and what the gate
/// did not decide op by op (a guest's stdout).
pub fn what_if(audit: &[AuditEvent], caps: Capabilities) -> Result<WhatIf, Error> {
    // The check asks whether a tool is allowed and registered: register
    // every allowed name with a stand-in (checked only, never called).
    let tools = crate::tools::ToolRegistry::stand_ins(caps.tools(), "not run by what-if");
    let flow = Arc::new(FlowState::new(caps.flow().clone(), Mark::default()));
    let mut sandbox = Sandbox::builder(caps)
        .services(Services::new().tools(tools))
        .guest_flow(flow)
        .build()?;
    let mut out = WhatIf::default();
    for e in audit {
        let skip = |reason: &str| Skipped {
            seq: e.seq,
            op: e.op.to_string(),
            reason: reason.to_string(),
        };
        // An interrupted op passed its capability check: that decision is
        // decided again, like an allowed one.
        if let Some(v) = e.violation
            && e.decision != Decision::Interrupted
            && (e.hard || v == Violation::InvalidRequest)
        {
            out.skipped
                .push(skip(&format!("{v} is not a capability decision")));
            continue;
        }
        if e.target.contains("… (") && e.target.contains("sha256") {
            out.skipped.push(skip("the record holds a cut target"));
            continue;
        }
        let op = match op_aimed_at(e.op.as_str(), &e.target) {
            Ok(op) => op,
            Err(why) => {
                out.skipped.push(skip(&why));
                continue;
            }
        };
        let was = match e.violation {
            Some(violation) if e.decision == Decision::Denied => Verdict::Denied { violation },
            _ => Verdict::Allowed {
                rule: e.rule.clone().unwrap_or_default(),
            },
        };
        let decided = sandbox
            .check(&op)
            .and_then(|permit| sandbox.flow_decide(&op, &permit).map(|()| permit));
        let now = match decided {
            Ok(permit) => Verdict::Allowed {
                rule: permit.rule().to_string(),
            },
            Err(d) => Verdict::Denied {
                violation: d.violation,
            },
        };
        let same = matches!(
            (&was, &now),
            (Verdict::Allowed { .. }, Verdict::Allowed { .. })
                | (Verdict::Denied { .. }, Verdict::Denied { .. })
        );
        if same {
            out.unchanged += 1;
        } else {
            out.flips.push(Flip {
                seq: e.seq,
                op: e.op.to_string(),
                target: e.target.clone(),
                was,
                now,
            });
        }
    }
    Ok(out)
}
