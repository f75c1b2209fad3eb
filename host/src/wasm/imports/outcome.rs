//! `sbx:agent/outcome`: a script runner says which exception the script
//! ended on, and the exit code it asked for. Not an op: nothing is
//! performed, nothing charged but the call itself; the run's report
//! carries both ([`crate::RunReport::error`], `exit_code`) when the run
//! then exits with failure. The guest chooses every byte, so each field is
//! kept bounded and the last call stands.

use super::super::HostState;
use super::sbx::agent::outcome::{Host, ScriptError};
use crate::bound::clip_to;

/// Bytes kept of an exception's type name.
const MAX_KIND_BYTES: usize = 256;
/// Bytes kept of its message (a traceback's last line is usually short;
/// a message quoting a large input is not).
const MAX_MESSAGE_BYTES: usize = 4096;

impl Host for HostState {
    fn script_failed(&mut self, e: ScriptError) -> wasmtime::Result<()> {
        self.script_error = Some(Box::new(crate::report::ScriptError {
            kind: clip_to(&e.kind, MAX_KIND_BYTES),
            message: clip_to(&e.message, MAX_MESSAGE_BYTES),
            line: e.line,
        }));
        Ok(())
    }

    fn exit_code(&mut self, code: i32) -> wasmtime::Result<()> {
        self.exit_code = Some(code);
        Ok(())
    }
}
