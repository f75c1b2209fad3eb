//! The tool capability's effect: one call of a registered tool, within the
//! time and output the gate lends. A panicking tool is a failed call.

use super::{ToolError, ToolLimits};
use crate::CancelHandle;
use crate::bound::{clip, quote};
use crate::cancel::{Abandoned, unless_cancelled};
use crate::capability::Output;
use crate::capability::{Grant, Permit};
use crate::failure::{ErrorKind, Failure, OpError};
use crate::quiet_panic::catch_quietly;
use crate::violation::{Denial, Violation};

/// Call the tool `permit` holds (named `name`) with `input` within `limits`.
///
/// With a `cancel` switch the tool runs on a thread of its own, so a cancel
/// ends the call within 5 ms even when the tool does not poll the switch
/// (it is then left to finish in the background).
pub(crate) fn call(
    permit: Permit,
    name: &str,
    input: &str,
    limits: ToolLimits,
    cancel: Option<&CancelHandle>,
) -> Result<Output, Failure> {
    let Grant::Tool(tool) = permit.grant else {
        return Err(Failure::Denied(Denial::new(
            Violation::InvalidRequest,
            format!("tool {}: a tool call needs a tool permit", quote(name)),
        )));
    };
    let timeout = limits.timeout;
    let outcome = match cancel {
        None => catch_quietly(|| tool.call(input, limits)),
        Some(cancel) => {
            let input = input.to_string();
            let run = move || catch_quietly(|| tool.call(&input, limits));
            match unless_cancelled(cancel, run) {
                Ok(r) => r,
                Err(Abandoned::Cancelled) => Ok(Err(ToolError::Cancelled)),
                Err(Abandoned::Failed(why)) => Ok(Err(ToolError::Failed(why.to_string()))),
            }
        }
    };
    match outcome {
        Ok(Err(ToolError::Cancelled)) => Err(Failure::Denied(Denial::new(
            Violation::Cancelled,
            format!(
                "tool {}: the run was cancelled during the call",
                quote(name)
            ),
        ))),
        Ok(Ok(output)) => Ok(Output::ToolOutput { output }),
        Ok(Err(ToolError::Timeout)) => Err(Failure::Denied(Denial::new(
            Violation::MaxWall,
            format!(
                "tool {} ran past the {} ms left of the wall budget",
                quote(name),
                timeout.as_millis()
            ),
        ))),
        Ok(Err(e)) => Err(Failure::Error(OpError::new(
            ErrorKind::ToolFailed,
            format!("tool {} failed: {e}", quote(name)),
        ))),
        Err(message) => Err(Failure::Error(OpError::new(
            ErrorKind::ToolFailed,
            format!("tool {} panicked: {}", quote(name), clip(&message)),
        ))),
    }
}
