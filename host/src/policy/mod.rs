//! Policy tools over grants and recorded runs: what another grant would
//! have decided ([`what_if`]), the smallest grant for a run ([`learn`]),
//! what one grant allows that another does not ([`diff`]), and risky
//! grants ([`lint`]). Pure: they read audit records and grants, perform
//! nothing.

mod diff;
mod learn;
mod learn_flow;
mod lint;
mod lint_flow;
mod what_if;

pub use diff::{BudgetChange, GrantDiff, diff};
pub use learn::{HEADROOM, Learned, learn};
pub use lint::{Finding, lint, lint_protected};
pub use what_if::{Flip, Skipped, Verdict, WhatIf, what_if};

/// Read an audit log (JSON lines, as `run --audit` and `exec --audit`
/// write them). Lines of other shapes (the MCP door's end records, seals)
/// are skipped; a line that is not JSON is an error naming its number.
pub fn read_audit(text: &str) -> Result<Vec<crate::report::AuditEvent>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        if v.get("end").is_some() || v.get("seal").is_some() {
            continue;
        }
        let ev = serde_json::from_value(v)
            .map_err(|e| format!("line {}: not an audit record: {e}", i + 1))?;
        out.push(ev);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
