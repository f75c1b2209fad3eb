//! What a call answers: a text block for the model and the same facts as
//! structured content for a program. A denial, a halt, a busy server or a
//! spent session total is a tool result with `isError: true`, never a
//! protocol error.

use super::catalog::{OutputKind, blocks};
use rmcp::model::{CallToolResult, ContentBlock};
use sbx_wasm::Output;
use sbx_wasm::SandboxResult;
use sbx_wasm::flow::{FlowPolicy, Mark, Readers};
use sbx_wasm::wasm::WasmRun;
use sbx_wasm::{RunReport, Status};
use serde_json::{Value, json};

/// Which call an answer belongs to.
pub(crate) struct Ids<'a> {
    pub(crate) session: &'a str,
    pub(crate) call: &'a str,
}

impl Ids<'_> {
    /// The audit stream's tag of this call of `tool`.
    pub(crate) fn tag<'a>(&'a self, tool: &'a str) -> super::audit::CallTag<'a> {
        super::audit::CallTag {
            session: self.session,
            call: self.call,
            tool,
        }
    }
}

fn answer(text: String, structured: Value, is_error: bool) -> CallToolResult {
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    r.structured_content = Some(structured);
    r
}

/// `ops 3/10000, output 12/16777216 B, fuel 1200/10000000000, wall 4/30000 ms`
pub(crate) fn usage_line(r: &RunReport) -> String {
    let (u, l) = (&r.usage, &r.limits);
    let fuel = match l.fuel {
        Some(max) => format!(", fuel {}/{max}", u.fuel.unwrap_or(0)),
        None => String::new(),
    };
    format!(
        "ops {}/{}, output {}/{} B{fuel}, wall {}/{} ms",
        u.ops, l.ops, u.output_bytes, l.output_bytes, u.wall_ms, l.wall_ms
    )
}

fn status_name(s: Status) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

/// Whether a run ended normally with exit code 0 (soft denials it handled
/// do not count): the one test of a run's success every answer uses.
pub(crate) fn clean_exit(r: &RunReport) -> bool {
    matches!(r.status, Status::Completed | Status::Exited) && r.exit_code.is_none_or(|c| c == 0)
}

/// The answer of `run_python` or `run_wasm`.
pub(crate) fn run(run: &WasmRun, ids: &Ids<'_>) -> CallToolResult {
    let r = &run.report;
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let status = match (r.status, r.violation, r.exit_code) {
        (Status::HardLimit, Some(v), _) => format!("hard_limit ({v})"),
        (Status::Exited, _, Some(code)) => format!("exited {code}"),
        (s, _, _) => status_name(s).as_str().unwrap_or("?").to_string(),
    };
    let failed = !clean_exit(r);
    let mut text = format!("status: {status}\n");
    for d in &r.denials {
        text += &format!("denied: {} {} ({})\n", d.op, d.target, d.violation);
    }
    if let Some(t) = &run.trap {
        text += &format!("trap: {t}\n");
    }
    if let Some(e) = &r.error {
        let at = e.line.map(|l| format!(" at line {l}")).unwrap_or_default();
        text += &format!("error: {}{at}: {}\n", e.kind, e.message);
    }
    text += &format!("stdout:\n{stdout}");
    if !stdout.is_empty() && !stdout.ends_with('\n') {
        text.push('\n');
    }
    if !stderr.is_empty() {
        text += &format!("stderr:\n{stderr}");
        if !stderr.ends_with('\n') {
            text.push('\n');
        }
    }
    text += &format!("usage: {}", usage_line(r));
    let structured = json!({
        "status": status_name(r.status),
        "exit_code": r.exit_code,
        "violation": r.violation,
        "stdout": stdout,
        "stderr": stderr,
        "denials": r.denials,
        "trap": run.trap,
        "error": r.error,
        "usage": r.usage,
        "limits": r.limits,
        "usage_line": usage_line(r),
        "notes": r.notes,
        "session": ids.session,
        "call": ids.call,
    });
    answer(text, structured, failed)
}

/// The answer of a catalog script tool: after a clean exit, its stdout as
/// the tool's content (one text block, or the content blocks it printed,
/// checked); otherwise the run's answer, so a failure reads like any
/// run's (status, stderr, denials).
pub(crate) fn script(run: &WasmRun, ids: &Ids<'_>, shape: OutputKind) -> CallToolResult {
    if !clean_exit(&run.report) {
        return self::run(run, ids);
    }
    match shape {
        OutputKind::Text => CallToolResult::success(vec![ContentBlock::text(
            String::from_utf8_lossy(&run.stdout),
        )]),
        OutputKind::Content => match blocks(&run.stdout) {
            Ok(content) => CallToolResult::success(content),
            Err(why) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the tool's output is not MCP content: {why}"
            ))]),
        },
    }
}

/// The `_meta` key under which a result's information-flow label goes, in
/// the form FIDES gateways read.
pub(crate) const IFC_META: &str = "com.github.ifc/labels";

/// Say what the call's result carries, when the grant labels anything: the
/// labels it read (structured `labels`), and in `_meta` the readers they
/// leave, as an information-flow label (`confidentiality` the sinks that may
/// still receive it, or `["public"]`; `integrity` untrusted: it is what
/// model-proposed code produced).
pub(crate) fn labels(answer: &mut CallToolResult, policy: &FlowPolicy, mark: &Mark) {
    if policy.is_empty() {
        return;
    }
    let readers = match policy.readers_of(mark) {
        Readers::All => vec!["public".to_string()],
        Readers::Only(sinks) => sinks.iter().map(ToString::to_string).collect(),
    };
    let names: Vec<&str> = mark.labels().collect();
    if let Some(Value::Object(o)) = &mut answer.structured_content {
        o.insert("labels".into(), json!(mark.held()));
    }
    let mut meta = answer.meta.take().unwrap_or_default();
    meta.0.insert(
        IFC_META.into(),
        json!({ "integrity": "untrusted", "confidentiality": readers }),
    );
    meta.0.insert("sbx/labels".into(), json!(names));
    answer.meta = Some(meta);
}

/// A call refused before it ran: `busy` (no run slot came free in time)
/// or `refused` (a session total is spent, or the request is malformed).
pub(crate) fn refused(status: &str, reason: &str, ids: &Ids<'_>) -> CallToolResult {
    let structured = json!({
        "status": status,
        "reason": reason,
        "session": ids.session,
        "call": ids.call,
    });
    answer(format!("status: {status}\n{reason}"), structured, true)
}

/// The answer of a single op (`read_file`, `fetch`, a granted tool, ...).
/// The rule that decided, as the model is told it: a mount by its guest
/// path alone. Where the grant's folders live on the host is the
/// operator's to know (the audit keeps the whole rule).
fn guest_facing(rule: &str) -> &str {
    rule.split_once(" (host ").map_or(rule, |(named, _)| named)
}

pub(crate) fn op(result: &SandboxResult, report: &RunReport, ids: &Ids<'_>) -> CallToolResult {
    let mut structured = serde_json::to_value(result).unwrap_or(Value::Null);
    if let Some(o) = structured.as_object_mut() {
        if let Some(rule) = &result.rule {
            o.insert("rule".into(), json!(guest_facing(rule)));
        }
        o.insert("violation".into(), json!(result.violation()));
        o.insert("usage_line".into(), json!(usage_line(report)));
        o.insert("session".into(), json!(ids.session));
        o.insert("call".into(), json!(ids.call));
    }
    if let Some(d) = &result.denial {
        let text = format!(
            "denied: {} {} ({}): {}",
            result.op, result.target, d.violation, d.message
        );
        return answer(text, structured, true);
    }
    if let Some(e) = &result.error {
        let text = format!("failed: {} {}: {}", result.op, result.target, e.message);
        return answer(text, structured, true);
    }
    let text = match &result.output {
        Some(Output::Data { content }) => String::from_utf8_lossy(&content.0).into_owned(),
        Some(Output::Written { bytes }) => format!("wrote {bytes} bytes to {}", result.target),
        Some(Output::Entries { entries }) => entries
            .iter()
            .map(|e| serde_json::to_string(e).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Output::Response { status, body, .. }) => {
            format!("HTTP {status}\n{}", String::from_utf8_lossy(&body.0))
        }
        Some(Output::ToolOutput { output }) => output.clone(),
        Some(other) => serde_json::to_string(other).unwrap_or_default(),
        None => "done".into(),
    };
    answer(text, structured, false)
}
