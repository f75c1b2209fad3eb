//! The audit log in OCSF 1.8 (the Open Cybersecurity Schema Framework), the
//! form SIEMs read: each record becomes one event of the class that fits
//! it, with the `security_control` profile's `disposition` and
//! `firewall_rule` on every one.
//!
//! | record | OCSF class | activity |
//! |---|---|---|
//! | `fs_read`, `fs_list` | File System Activity (1001) | Read (2) |
//! | `fs_stat` | File System Activity (1001) | Get Attributes (8) |
//! | `fs_write`, `fs_mkdir` | File System Activity (1001) | Create (1) |
//! | `fs_remove` | File System Activity (1001) | Delete (4) |
//! | `net_fetch` | HTTP Activity (4002) | Other (99): the record does not keep the method |
//! | `net_connect` | Network Activity (4001) | Open (1), `dst_endpoint` the host, port and address dialled |
//! | `net_datagram` | Network Activity (4001) | Traffic (6), `dst_endpoint` the peer's host, port and address |
//! | `net_listen` | Network Activity (4001) | Listen (7), `src_endpoint` the local address and port bound |
//! | `net_lookup` | DNS Activity (4003) | Query (1), `query.hostname` the name |
//! | `tool_call` | API Activity (6003) | Other (99), `api.operation` the tool |
//! | `kv_get`/`kv_list`, `kv_put`, `kv_delete` | API Activity (6003) | Read (2), Update (3), Delete (4) |
//! | `stdout`, `stderr`, `invalid` | API Activity (6003) | Other (99) |
//! | a run's start and end | Application Lifecycle (6002) | Start (3), Stop (4) |
//! | a hard violation | Detection Finding (2004) | Create (1), besides its own event |
//!
//! On every event: `disposition_id` Allowed (1) or Blocked (2) and
//! `action_id` Allowed (1) or Denied (2) (an `interrupted` record is
//! Allowed with status Failure); `status_id` Success (1) or Failure (2);
//! `severity_id` Informational (1) when allowed, Medium (3) for a soft
//! refusal, High (4) for a hard one; `firewall_rule.name` the rule that
//! decided; `metadata` with the product, the OCSF version, the
//! `security_control` profile, the grant's digest as the tag `sbx.grant`,
//! `correlation_uid` the run (or MCP session and call), `sequence` the
//! record's `seq`; `actor` the program and, at the MCP door, the session;
//! what OCSF has no field for (the violation's name, labels, evidence,
//! secrets' names) under `unmapped.sbx`.

use crate::OpKind;
use crate::report::{AuditEvent, Decision, RunReport, Status};
use class::{Named, activity_of, category};
use serde_json::{Value, json};

/// The OCSF version events are written in.
pub const VERSION: &str = "1.8.0";

/// What every event of a run shares (start from `Context::default()` and
/// set what you know).
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The program that ran (the component's or script's file name, or
    /// `plan`).
    pub program: String,
    /// The run's id: what correlates its events (an MCP door's
    /// `session/call`).
    pub run: String,
    /// The MCP session, when there is one.
    pub session: Option<String>,
    /// The grant's digest (`sha256:...`).
    pub grant: String,
    /// When the run started, in milliseconds since the Unix epoch.
    pub start_ms: u64,
    /// The host's name, for `device`.
    pub host: String,
    /// The product's version.
    pub version: String,
}

/// The fields every event has: class, activity, time, metadata, actor,
/// device.
fn base(
    ctx: &Context,
    (class, class_name): (u32, &str),
    (activity, activity_name): Named,
    time: u64,
    seq: Option<u64>,
) -> serde_json::Map<String, Value> {
    let (cat, cat_name) = category(class);
    let mut metadata = json!({
        "product": { "name": "sbx-wasm", "vendor_name": "sbx-wasm", "version": ctx.version },
        "version": VERSION,
        "profiles": ["security_control"],
        "correlation_uid": ctx.run,
        "tags": [{ "name": "sbx.grant", "value": ctx.grant }],
        "log_name": "sbx-wasm audit",
    });
    if let Some(seq) = seq {
        metadata["sequence"] = json!(seq);
        metadata["uid"] = json!(format!("{}#{seq}", ctx.run));
    }
    let mut actor = json!({ "app_name": ctx.program });
    if let Some(s) = &ctx.session {
        actor["session"] = json!({ "uid": s });
    }
    let mut v = json!({
        "class_uid": class,
        "class_name": class_name,
        "category_uid": cat,
        "category_name": cat_name,
        "activity_id": activity,
        "activity_name": activity_name,
        "type_uid": u64::from(class) * 100 + u64::from(activity),
        "type_name": format!("{class_name}: {activity_name}"),
        "time": time,
        "metadata": metadata,
    });
    // Who did it and where, in the fields each class has: the actor (the
    // program, its MCP session), the host as the device, the program as
    // the source endpoint.
    let device = json!({ "type_id": 0, "type": "Unknown", "name": ctx.host });
    let endpoint = json!({ "name": ctx.program });
    let (with_actor, with_device, with_src) = match class {
        1001 => (true, true, false),
        4001..=4003 => (false, false, true),
        6003 => (true, false, true),
        2004 => (false, true, false),
        _ => (false, false, false),
    };
    if with_actor {
        v["actor"] = actor;
    }
    if with_device {
        v["device"] = device;
    }
    if with_src {
        v["src_endpoint"] = endpoint;
    }
    match v {
        Value::Object(o) => o,
        _ => serde_json::Map::new(),
    }
}

/// The address a fetch or a connection dialled, as its record holds it.
fn dialled(e: &AuditEvent) -> Option<std::net::SocketAddr> {
    e.address.as_deref()?.parse().ok()
}

/// The event of one audit record.
pub fn event(e: &AuditEvent, ctx: &Context) -> Value {
    let (class, class_name, activity) = activity_of(e);
    let request = (class == 4002)
        .then(|| url::Url::parse(&e.target).ok())
        .flatten();
    let time = ctx.start_ms.saturating_add(e.elapsed_ms);
    let mut o = base(ctx, (class, class_name), activity, time, Some(e.seq));
    let allowed = e.decision != Decision::Denied;
    let (disp, action) = if allowed {
        ((1, "Allowed"), (1, "Allowed"))
    } else {
        ((2, "Blocked"), (2, "Denied"))
    };
    let failed = e.decision != Decision::Allowed;
    let severity = match (e.decision, e.hard) {
        (Decision::Allowed, _) => (1, "Informational"),
        (_, false) => (3, "Medium"),
        (_, true) => (4, "High"),
    };
    let mut put = |k: &str, v: Value| {
        o.insert(k.into(), v);
    };
    put("disposition_id", json!(disp.0));
    put("disposition", json!(disp.1));
    put("action_id", json!(action.0));
    put("action", json!(action.1));
    put("status_id", json!(if failed { 2 } else { 1 }));
    put("status", json!(if failed { "Failure" } else { "Success" }));
    put("severity_id", json!(severity.0));
    put("severity", json!(severity.1));
    if let Some(d) = &e.detail {
        put("message", json!(d));
        put("status_detail", json!(d));
    }
    if let Some(rule) = &e.rule {
        put("firewall_rule", json!({ "name": rule, "type": class_name }));
    }
    match class {
        1001 => {
            let name = e.target.rsplit('/').find(|s| !s.is_empty()).unwrap_or("/");
            let folder = matches!(e.op.kind(), Some(OpKind::FsList | OpKind::FsMkdir));
            let (type_id, type_name) = if folder {
                (2, "Folder")
            } else {
                (1, "Regular File")
            };
            put(
                "file",
                json!({ "name": name, "path": e.target, "type_id": type_id, "type": type_name }),
            );
        }
        4002 => {
            let mut url = json!({ "url_string": e.target });
            if let Some(u) = &request {
                url["scheme"] = json!(u.scheme());
                if let Some(h) = u.host_str() {
                    url["hostname"] = json!(h);
                }
                if let Some(p) = u.port_or_known_default() {
                    url["port"] = json!(p);
                }
                url["path"] = json!(u.path());
                if let Some(q) = u.query() {
                    url["query_string"] = json!(q);
                }
            }
            put("http_request", json!({ "url": url }));
            if let Some(code) = e.status {
                put("http_response", json!({ "code": code }));
            }
            if let Some(addr) = dialled(e) {
                put(
                    "dst_endpoint",
                    json!({ "ip": addr.ip().to_string(), "port": addr.port() }),
                );
            }
        }
        4001 if e.op == OpKind::NetListen => {
            // `tcp://ip:port` or `udp://ip:port`: the local side.
            let bound = e
                .target
                .split_once("://")
                .map_or(e.target.as_str(), |(_, a)| a);
            if let Ok(addr) = bound.parse::<std::net::SocketAddr>() {
                put(
                    "src_endpoint",
                    json!({ "ip": addr.ip().to_string(), "port": addr.port() }),
                );
            }
        }
        4001 => {
            let (host, port) = e.target.rsplit_once(':').unwrap_or((&e.target, ""));
            let mut dst = json!({ "hostname": host.trim_start_matches('[').trim_end_matches(']') });
            if let Ok(p) = port.parse::<u16>() {
                dst["port"] = json!(p);
            }
            if let Some(addr) = dialled(e) {
                dst["ip"] = json!(addr.ip().to_string());
            }
            put("dst_endpoint", dst);
        }
        4003 => {
            put("query", json!({ "hostname": e.target }));
        }
        _ => {
            let service = if e.op.kind().is_some_and(|k| k.capability() == "kv") {
                "sbx key-value store"
            } else {
                "sbx gate"
            };
            put(
                "api",
                json!({ "operation": format!("{} {}", e.op, e.target), "service": { "name": service } }),
            );
        }
    }
    let mut sbx = json!({ "op": e.op, "decision": e.decision, "bytes": e.bytes });
    if let Some(v) = e.violation {
        sbx["violation"] = json!(v);
        sbx["hard"] = json!(e.hard);
    }
    if !e.labels.is_empty() {
        sbx["labels"] = json!(e.labels);
    }
    if let Some(ev) = &e.evidence {
        sbx["evidence"] = json!(ev);
    }
    if !e.secrets.is_empty() {
        sbx["secrets"] = json!(e.secrets);
    }
    put("unmapped", json!({ "sbx": sbx }));
    Value::Object(o)
}

/// The Detection Finding of a hard violation's record (`None` for any
/// other).
pub fn finding(e: &AuditEvent, ctx: &Context) -> Option<Value> {
    let v = e.violation.filter(|_| e.hard)?;
    let time = ctx.start_ms.saturating_add(e.elapsed_ms);
    let mut o = base(
        ctx,
        (2004, "Detection Finding"),
        (1, "Create"),
        time,
        Some(e.seq),
    );
    o.insert(
        "finding_info".into(),
        json!({
            "uid": format!("{}#{}:{v}", ctx.run, e.seq),
            "title": format!("sbx-wasm halted a run: {v}"),
            "desc": e.detail.clone().unwrap_or_default(),
            "types": ["sbx-wasm hard limit"],
        }),
    );
    o.insert("severity_id".into(), json!(4));
    o.insert("severity".into(), json!("High"));
    o.insert("disposition_id".into(), json!(2));
    o.insert("disposition".into(), json!("Blocked"));
    o.insert("status_id".into(), json!(1));
    o.insert("status".into(), json!("New"));
    o.insert(
        "message".into(),
        json!(format!("{v} at {} {}", e.op, e.target)),
    );
    Some(Value::Object(o))
}

/// How a run ended, as a report or an MCP end record says.
#[non_exhaustive]
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Ending {
    /// Its status.
    pub status: Status,
    /// Its exit code, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The hard violation that halted it.
    #[serde(default)]
    pub violation: Option<crate::Violation>,
    /// When it ended, in milliseconds since the Unix epoch (an MCP end
    /// record's `at_ms`).
    #[serde(default)]
    pub at_ms: Option<u64>,
    /// How long it ran, in milliseconds (`usage.wall_ms`).
    #[serde(default, rename = "usage", deserialize_with = "wall_ms")]
    pub wall_ms: u64,
}

/// `usage.wall_ms` of an end record (0 when it has none).
fn wall_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let usage: Value = serde::Deserialize::deserialize(d)?;
    Ok(usage["wall_ms"].as_u64().unwrap_or(0))
}

impl From<&RunReport> for Ending {
    fn from(r: &RunReport) -> Ending {
        Ending {
            status: r.status,
            exit_code: r.exit_code,
            violation: r.violation,
            at_ms: None,
            wall_ms: r.usage.wall_ms,
        }
    }
}

/// Every event of one MCP call (`session`, `call`, of `tool`): its start
/// (its end less its wall time), each record's event (and finding), and,
/// when `end` says how it ended, its end; timed by `end.at_ms`, else
/// `default_at`. The call is a run of its own: `SESSION/CALL`.
pub fn call(
    base: &Context,
    (session, call, tool): (Option<&str>, &str, &str),
    records: &[AuditEvent],
    end: Option<&Ending>,
    default_at: u64,
) -> Vec<Value> {
    let at = end.and_then(|e| e.at_ms).unwrap_or(default_at);
    let mut c = base.clone();
    c.session = session.map(str::to_string);
    c.run = format!("{}/{call}", session.unwrap_or_default());
    c.program = tool.to_string();
    c.start_ms = at.saturating_sub(end.map_or(0, |e| e.wall_ms));
    let mut out = run(records, None, &c);
    if let Some(end) = end {
        out.push(lifecycle(&c, Some(end), at));
    }
    out
}

/// An Application Lifecycle event: the run's start (`end` = `None`) or its
/// end, at `time`.
pub fn lifecycle(ctx: &Context, end: Option<&Ending>, time: u64) -> Value {
    let activity = if end.is_some() {
        (4, "Stop")
    } else {
        (3, "Start")
    };
    let mut o = base(ctx, (6002, "Application Lifecycle"), activity, time, None);
    o.insert(
        "app".into(),
        json!({ "name": ctx.program, "vendor_name": "sbx-wasm", "uid": ctx.run }),
    );
    let (sev, status, message) = match end {
        None => (
            (1, "Informational"),
            (1, "Success"),
            "the run started".to_string(),
        ),
        Some(r) => {
            let ok = matches!(r.status, Status::Completed | Status::Exited)
                && r.exit_code.is_none_or(|c| c == 0);
            let status = serde_json::to_value(r.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let why = r.violation.map(|v| format!(" ({v})")).unwrap_or_default();
            let sev = if r.violation.is_some() {
                (4, "High")
            } else {
                (1, "Informational")
            };
            let st = if ok { (1, "Success") } else { (2, "Failure") };
            (sev, st, format!("the run ended: {status}{why}"))
        }
    };
    o.insert("severity_id".into(), json!(sev.0));
    o.insert("severity".into(), json!(sev.1));
    o.insert("status_id".into(), json!(status.0));
    o.insert("status".into(), json!(status.1));
    o.insert("disposition_id".into(), json!(1));
    o.insert("disposition".into(), json!("Allowed"));
    o.insert("message".into(), json!(message));
    Value::Object(o)
}

/// Every event of a run: its start, each record's event (and a finding
/// for a hard violation), and its end when `report` is given.
pub fn run(audit: &[AuditEvent], report: Option<&RunReport>, ctx: &Context) -> Vec<Value> {
    let mut out = vec![lifecycle(ctx, None, ctx.start_ms)];
    for e in audit {
        out.push(event(e, ctx));
        out.extend(finding(e, ctx));
    }
    if let Some(r) = report {
        let end = ctx.start_ms.saturating_add(r.usage.wall_ms);
        out.push(lifecycle(ctx, Some(&Ending::from(r)), end));
    }
    out
}

/// Every event of an audit log as `run --audit` or the MCP door's
/// `--audit` wrote it (seals skipped). A run's log takes `ctx` as it is;
/// in an MCP stream each call is a run of its own (`session/call`), timed
/// by its end record's `at_ms`, with its start and end events.
pub fn from_log(text: &str, ctx: &Context) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut records: Vec<AuditEvent> = Vec::new();
    let mut started = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        if v.get("seal").is_some() {
            continue;
        }
        let tag = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(end) = v.get("end") {
            // An MCP call ended: its records, between its start and end.
            let ending: Ending = serde_json::from_value(end.clone())
                .map_err(|e| format!("line {}: not an end record: {e}", i + 1))?;
            let (session, id) = (tag("session"), tag("call").unwrap_or_default());
            let tool = tag("tool").unwrap_or_else(|| ctx.program.clone());
            let tags = (session.as_deref(), id.as_str(), tool.as_str());
            out.extend(call(ctx, tags, &records, Some(&ending), ctx.start_ms));
            records.clear();
            continue;
        }
        let e: AuditEvent = serde_json::from_value(v.clone())
            .map_err(|e| format!("line {}: not an audit record: {e}", i + 1))?;
        if v.get("call").is_some() {
            records.push(e);
        } else {
            if !started {
                out.push(lifecycle(ctx, None, ctx.start_ms));
                started = true;
            }
            out.push(event(&e, ctx));
            out.extend(finding(&e, ctx));
        }
    }
    Ok(out)
}

mod class;
#[cfg(test)]
mod tests;
