//! OpenTelemetry export, with `--features otel`: a span per run (`sbx.run`)
//! with a child per gated decision (`sbx.op`, with `sbx.decision`,
//! `sbx.rule`, `sbx.violation`), at the MCP door a span per call
//! (`tools/call TOOL`, under the client's trace context from
//! `params._meta.traceparent`, its status following `isError`), and metrics
//! (runs, denials by violation, runs in flight, run durations), sent over
//! OTLP http/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT` (or the signal's own
//! endpoint variable). Without the feature, or without an endpoint, every
//! method does nothing.

#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
pub use otel::Telemetry;

#[cfg(not(feature = "otel"))]
mod off;
#[cfg(not(feature = "otel"))]
pub use off::Telemetry;

use crate::report::{AuditEvent, RunReport};

/// Whether this build can export (the `otel` feature).
pub const ENABLED: bool = cfg!(feature = "otel");

/// Whether this build exports and the environment names an OTLP endpoint
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, or a signal's own endpoint variable).
pub fn wanted() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    ENABLED
        && (set("OTEL_EXPORTER_OTLP_ENDPOINT")
            || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
}
use std::time::SystemTime;

/// One run, as the spans and metrics tell it.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub struct RunInfo<'a> {
    /// `run`, `exec`, or the MCP tool.
    pub kind: &'a str,
    /// The program (file name, `plan`).
    pub program: &'a str,
    /// When it started.
    pub start: SystemTime,
    /// Its report.
    pub report: &'a RunReport,
    /// Its records, in order.
    pub audit: &'a [AuditEvent],
    /// The MCP call it belongs to (`session`, `call`): its span is the
    /// run's parent.
    pub call: Option<(&'a str, &'a str)>,
}
