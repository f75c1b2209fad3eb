//! The tool capability's check: bounded name and input, on the allow-list,
//! and an implementation registered.

use super::ToolRegistry;
use crate::bound::{MAX_TOOL_INPUT_BYTES, MAX_TOOL_NAME_BYTES, Quoted};
use crate::capability::{Grant, Permit};
use crate::violation::{Denial, Violation};
use std::collections::BTreeSet;

/// Whether tool `name` may be called with `input` when `allowed` is the
/// grant's allow-list and `registry` holds the implementations: the permit
/// holds the implementation found and names the rule.
pub(crate) fn check_call(
    allowed: &BTreeSet<String>,
    registry: &ToolRegistry,
    name: &str,
    input: &str,
) -> Result<Permit, Denial> {
    if name.len() > MAX_TOOL_NAME_BYTES {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!(
                "tool name is {} bytes long; at most {MAX_TOOL_NAME_BYTES} are accepted",
                name.len()
            ),
        ));
    }
    if input.len() > MAX_TOOL_INPUT_BYTES {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!(
                "tool input is {} bytes; at most {MAX_TOOL_INPUT_BYTES} are accepted",
                input.len()
            ),
        ));
    }
    if !allowed.contains(name) {
        return Err(Denial::new(
            Violation::ToolDenied,
            format!("tool {} is not on the allow-list", Quoted(name)),
        ));
    }
    let Some(tool) = registry.get(name) else {
        return Err(Denial::new(
            Violation::ToolDenied,
            format!(
                "tool {} is allowed but no implementation is registered",
                Quoted(name)
            ),
        ));
    };
    if let Err(why) = tool.check_input(input) {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!("tool {}: {why}", Quoted(name)),
        ));
    }
    // Built by hand: this runs on every allowed call, and format! costs
    // more than the two copies.
    let mut rule = String::with_capacity(5 + name.len());
    rule.push_str("tool ");
    rule.push_str(name);
    Ok(Permit::new(rule, Grant::Tool(tool.clone())))
}
