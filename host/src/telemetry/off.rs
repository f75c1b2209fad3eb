//! Telemetry when the crate was built without the `otel` feature: nothing
//! is kept, nothing is sent.

use super::RunInfo;

/// Does nothing: the crate has no OTLP exporter (build it with the `otel`
/// feature).
#[derive(Default)]
pub struct Telemetry;

impl Telemetry {
    /// Telemetry as the environment asks for it: none, without `otel`.
    pub fn from_env() -> Telemetry {
        Telemetry
    }
    /// The spans and metrics of one run (nothing, without `otel`).
    pub fn run(&self, _: &RunInfo<'_>) {
        // Nothing is kept.
    }
    /// An MCP call began (nothing, without `otel`).
    pub fn begin_call(&self, _: &str, _: &str, _: &str, _: Option<String>) {
        // Nothing is kept.
    }
    /// An MCP call ended (nothing, without `otel`).
    pub fn end_call(&self, _: &str, _: &str, _: bool) {
        // Nothing is kept.
    }
    /// Send what is pending (nothing, without `otel`).
    pub fn shutdown(&self) {
        // Nothing is pending.
    }
}
