//! The OTLP exporter: providers made from the standard environment
//! variables, spans written after the fact with the run's own times (a
//! run's records say when each decision was made), metrics read every few
//! seconds and at shutdown.

use super::RunInfo;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _, UpDownCounter};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The exporter's HTTP client: ureq, blocking (the exporters call it from
/// their own threads).
#[derive(Debug)]
struct Ureq(ureq::Agent);

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Ureq {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let req = http::Request::from_parts(parts, body.to_vec());
        let mut resp = self.0.run(req)?;
        let status = resp.status();
        let bytes = resp.body_mut().read_to_vec()?;
        Ok(http::Response::builder()
            .status(status)
            .body(bytes::Bytes::from(bytes))?)
    }
}

fn client() -> Ureq {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build();
    Ureq(ureq::Agent::new_with_config(config))
}

/// What metrics are kept.
struct Meters {
    runs: Counter<u64>,
    denials: Counter<u64>,
    in_flight: UpDownCounter<i64>,
    duration: Histogram<f64>,
}

/// The providers, when an endpoint is set.
struct Live {
    traces: SdkTracerProvider,
    tracer: SdkTracer,
    metrics: SdkMeterProvider,
    meters: Meters,
    /// Each MCP call in flight: its span's context (the parent of its run).
    calls: Mutex<HashMap<(String, String), Context>>,
    /// Shut down already (the providers are flushed once).
    down: std::sync::atomic::AtomicBool,
}

/// Telemetry, exported when `OTEL_EXPORTER_OTLP_ENDPOINT` (or a signal's
/// own endpoint variable) is set.
pub struct Telemetry(Option<Live>);

impl Telemetry {
    /// Telemetry as the environment asks for it: exported when an OTLP
    /// endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`, or
    /// `..._TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`), else none.
    pub fn from_env() -> Telemetry {
        if !super::wanted() {
            return Telemetry(None);
        }
        match Live::new() {
            Ok(live) => Telemetry(Some(live)),
            Err(e) => {
                eprintln!("sbx-wasm: warning: OpenTelemetry export is off: {e}");
                Telemetry(None)
            }
        }
    }

    /// The spans and metrics of one run.
    pub fn run(&self, info: &RunInfo<'_>) {
        if let Some(live) = &self.0 {
            live.run(info);
        }
    }

    /// An MCP call began: its span, under the client's trace context.
    pub fn begin_call(&self, tool: &str, session: &str, call: &str, traceparent: Option<String>) {
        if let Some(live) = &self.0 {
            live.begin_call(tool, session, call, traceparent);
        }
    }

    /// An MCP call ended: its span's status follows `is_error`.
    pub fn end_call(&self, session: &str, call: &str, is_error: bool) {
        if let Some(live) = &self.0 {
            live.end_call(session, call, is_error);
        }
    }

    /// Send what is pending and stop.
    pub fn shutdown(&self) {
        if let Some(live) = &self.0
            && !live.down.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let _ = live.traces.force_flush();
            let _ = live.metrics.force_flush();
            let _ = live.traces.shutdown();
            let _ = live.metrics.shutdown();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Live {
    fn new() -> Result<Live, String> {
        let resource = Resource::builder().with_service_name("sbx-wasm").build();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client())
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build()
            .map_err(|e| e.to_string())?;
        let traces = SdkTracerProvider::builder()
            .with_simple_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let metrics_exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client())
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build()
            .map_err(|e| e.to_string())?;
        let metrics = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics_exporter)
            .with_resource(resource)
            .build();
        let meter = metrics.meter("sbx-wasm");
        let meters = Meters {
            runs: meter
                .u64_counter("sbx.runs")
                .with_description("Runs, by how they ended.")
                .build(),
            denials: meter
                .u64_counter("sbx.denials")
                .with_description("Refused operations, by violation.")
                .build(),
            in_flight: meter
                .i64_up_down_counter("sbx.runs.in_flight")
                .with_description("MCP calls running now.")
                .build(),
            duration: meter
                .f64_histogram("sbx.run.duration")
                .with_unit("s")
                .with_description("How long runs took.")
                .build(),
        };
        let tracer = traces.tracer("sbx-wasm");
        Ok(Live {
            traces,
            tracer,
            metrics,
            meters,
            calls: Mutex::default(),
            down: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn run(&self, info: &RunInfo<'_>) {
        let r = info.report;
        let status = serde_json::to_value(r.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let parent = info
            .call
            .and_then(|(s, c)| {
                let calls = self.calls.lock().ok()?;
                calls.get(&(s.to_string(), c.to_string())).cloned()
            })
            .unwrap_or_default();
        let end = info.start + Duration::from_millis(r.usage.wall_ms);
        let mut run = self
            .tracer
            .span_builder("sbx.run")
            .with_kind(SpanKind::Internal)
            .with_start_time(info.start)
            .with_attributes(vec![
                KeyValue::new("sbx.kind", info.kind.to_string()),
                KeyValue::new("sbx.program", info.program.to_string()),
                KeyValue::new("sbx.status", status.clone()),
                KeyValue::new("sbx.ops", r.usage.ops as i64),
                KeyValue::new("sbx.denials", r.denials.len() as i64),
            ])
            .start_with_context(&self.tracer, &parent);
        if let Some(v) = r.violation {
            run.set_attribute(KeyValue::new("sbx.violation", v.to_string()));
            run.set_status(Status::error(v.to_string()));
        }
        let cx = parent.with_span(run);
        for e in info.audit {
            let at = info.start + Duration::from_millis(e.elapsed_ms);
            let decision = serde_json::to_value(e.decision)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let mut attrs = vec![
                KeyValue::new("sbx.op", e.op.to_string()),
                KeyValue::new("sbx.target", e.target.clone()),
                KeyValue::new("sbx.decision", decision),
                KeyValue::new("sbx.seq", e.seq as i64),
            ];
            if let Some(rule) = &e.rule {
                attrs.push(KeyValue::new("sbx.rule", rule.clone()));
            }
            if let Some(v) = e.violation {
                attrs.push(KeyValue::new("sbx.violation", v.to_string()));
                self.meters
                    .denials
                    .add(1, &[KeyValue::new("sbx.violation", v.to_string())]);
            }
            let mut op = self
                .tracer
                .span_builder(format!("sbx.op {}", e.op))
                .with_kind(SpanKind::Internal)
                .with_start_time(at)
                .with_attributes(attrs)
                .start_with_context(&self.tracer, &cx);
            if let Some(v) = e.violation {
                op.set_status(Status::error(v.to_string()));
            }
            op.end_with_timestamp(at);
        }
        cx.span().end_with_timestamp(end);
        self.meters.runs.add(
            1,
            &[
                KeyValue::new("sbx.kind", info.kind.to_string()),
                KeyValue::new("sbx.status", status),
            ],
        );
        self.meters.duration.record(
            r.usage.wall_us as f64 / 1e6,
            &[KeyValue::new("sbx.kind", info.kind.to_string())],
        );
    }

    fn begin_call(&self, tool: &str, session: &str, call: &str, traceparent: Option<String>) {
        let mut carrier = HashMap::new();
        if let Some(tp) = traceparent {
            carrier.insert("traceparent".to_string(), tp);
        }
        let parent = TraceContextPropagator::new().extract(&carrier);
        let span = self
            .tracer
            .span_builder(format!("tools/call {tool}"))
            .with_kind(SpanKind::Server)
            .with_attributes(vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", tool.to_string()),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("mcp.session.id", session.to_string()),
                KeyValue::new("sbx.call", call.to_string()),
            ])
            .start_with_context(&self.tracer, &parent);
        self.meters.in_flight.add(1, &[]);
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(
                (session.to_string(), call.to_string()),
                parent.with_span(span),
            );
        }
    }

    fn end_call(&self, session: &str, call: &str, is_error: bool) {
        let cx = self
            .calls
            .lock()
            .ok()
            .and_then(|mut c| c.remove(&(session.to_string(), call.to_string())));
        self.meters.in_flight.add(-1, &[]);
        if let Some(cx) = cx {
            let span = cx.span();
            if is_error {
                span.set_status(Status::error("isError"));
                span.set_attribute(KeyValue::new("error.type", "tool_error"));
            }
            span.end_with_timestamp(SystemTime::now());
        }
    }
}
