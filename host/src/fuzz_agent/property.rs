//! Ready properties over a fuzzed run, and a finding printed as a
//! reproduction: the broken property, the op that broke it, and the host
//! answers that led there.

use super::{FuzzRun, HostAnswers};
use crate::report::Status;
use crate::violation::Violation;
use std::fmt;

/// What a fuzzed run must hold to.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub enum Property {
    /// The guest never attempts an op refused with this violation (e.g.
    /// `egress_denied`: it is never steered into a fetch its grant forbids).
    NeverDenied(Violation),
    /// The guest never attempts any op its grant refuses.
    NoDenial,
    /// The guest never traps.
    NoTrap,
    /// No hard limit halts the guest, except these (e.g. `max_fuel` for an
    /// agent expected to loop on some inputs).
    NoHardLimitExcept(Vec<Violation>),
    /// Its stdout satisfies the predicate, named for the finding.
    Stdout(&'static str, fn(&[u8]) -> bool),
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Property::NeverDenied(v) => write!(f, "never {v}"),
            Property::NoDenial => f.write_str("no denial"),
            Property::NoTrap => f.write_str("no trap"),
            Property::NoHardLimitExcept(vs) => {
                let names: Vec<&str> = vs.iter().map(|v| v.as_str()).collect();
                write!(f, "no hard limit except [{}]", names.join(", "))
            }
            Property::Stdout(name, _) => write!(f, "stdout: {name}"),
        }
    }
}

/// A property a fuzzed run broke, with what is needed to reproduce it.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Finding {
    /// The property, in words.
    pub property: String,
    /// What broke it (the op and its refusal, the trap, the limit).
    pub what: String,
    /// The sequence number of the op that broke it, when one did.
    pub seq: Option<u64>,
    /// The host answers that led there (run them again to reproduce).
    pub answers: HostAnswers,
}

impl FuzzRun {
    /// The first of `properties` this run breaks, as a finding.
    pub fn check(&self, properties: &[Property]) -> Result<(), Box<Finding>> {
        for p in properties {
            if let Some((seq, what)) = self.breaks(p) {
                return Err(Box::new(Finding {
                    property: p.to_string(),
                    what,
                    seq,
                    answers: self.answers.clone(),
                }));
            }
        }
        Ok(())
    }

    fn breaks(&self, p: &Property) -> Option<(Option<u64>, String)> {
        let denied = |want: Option<Violation>| {
            self.audit.iter().find(|e| match (e.violation, want) {
                (Some(v), Some(w)) => v == w,
                (Some(v), None) => !v.is_hard(),
                _ => false,
            })
        };
        match p {
            Property::NeverDenied(v) => denied(Some(*v)),
            Property::NoDenial => denied(None),
            Property::NoTrap => {
                return (self.report.status == Status::Trapped).then(|| {
                    let msg = self.trap.clone().unwrap_or_default();
                    (None, format!("the guest trapped: {msg}"))
                });
            }
            Property::NoHardLimitExcept(allowed) => {
                return match self.report.violation {
                    Some(v) if self.report.status == Status::HardLimit && !allowed.contains(&v) => {
                        let seq = self.report.denials.iter().find(|d| d.hard).map(|d| d.seq);
                        Some((seq, format!("the run was halted by {v}")))
                    }
                    _ => None,
                };
            }
            Property::Stdout(name, pred) => {
                return (!pred(&self.stdout)).then(|| {
                    (
                        None,
                        format!(
                            "stdout is not {name}: {:?}",
                            String::from_utf8_lossy(&self.stdout)
                        ),
                    )
                });
            }
        }
        .map(|e| {
            let v = e.violation.map(|v| v.to_string()).unwrap_or_default();
            (
                Some(e.seq),
                format!("seq {}: {} {} was refused ({v})", e.seq, e.op, e.target),
            )
        })
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "property broken: {}", self.property)?;
        writeln!(f, "  {}", self.what)?;
        writeln!(f, "host answers that led there:")?;
        let a = &self.answers;
        let show = |b: &[u8]| format!("{:?}", String::from_utf8_lossy(b));
        for (i, p) in a.pages.iter().enumerate() {
            writeln!(
                f,
                "  fetch {} answered {}: {}",
                i + 1,
                p.status,
                show(&p.body)
            )?;
        }
        for (i, t) in a.tools.iter().enumerate() {
            writeln!(f, "  tool call {} answered: {}", i + 1, show(t.as_bytes()))?;
        }
        for (i, c) in a.files.iter().enumerate() {
            writeln!(f, "  file {} held: {}", i + 1, show(c))?;
        }
        if !a.stdin.is_empty() {
            writeln!(f, "  stdin: {}", show(&a.stdin))?;
        }
        write!(
            f,
            "as JSON (AgentFuzzer::run reproduces it): {}",
            serde_json::to_string(a).unwrap_or_default()
        )
    }
}
