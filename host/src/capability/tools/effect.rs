//! The tool capability's effect: one call of a registered tool, within the
//! time and output the gate lends. A panicking tool is a failed call.

use super::{ToolError, ToolLimits, ToolRegistry};
use crate::bound::quote;
use crate::capability::Output;
use crate::failure::{ErrorKind, Failure, OpError};
use crate::violation::{Denial, Violation};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Call tool `name` from `registry` with `input` within `limits`.
pub(crate) fn call(
    registry: &ToolRegistry,
    name: &str,
    input: &str,
    limits: ToolLimits,
) -> Result<Output, Failure> {
    let Some(tool) = registry.get(name).cloned() else {
        return Err(Failure::Denied(Denial::new(
            Violation::ToolDenied,
            format!("tool {} is not registered", quote(name)),
        )));
    };
    match catch_unwind(AssertUnwindSafe(|| tool.call(input, limits))) {
        Ok(Ok(output)) => Ok(Output::ToolOutput { output }),
        Ok(Err(ToolError::Timeout)) => Err(Failure::Denied(Denial::new(
            Violation::MaxWall,
            format!(
                "tool {} ran past the {} ms left of the wall budget",
                quote(name),
                limits.timeout.as_millis()
            ),
        ))),
        Ok(Err(e)) => Err(Failure::Error(OpError::new(
            ErrorKind::ToolFailed,
            format!("tool {} failed: {e}", quote(name)),
        ))),
        Err(_) => Err(Failure::Error(OpError::new(
            ErrorKind::ToolFailed,
            format!("tool {} panicked", quote(name)),
        ))),
    }
}
