//! The network capability's plan form:
//! `{"op": "net_fetch", "url": "https://api.example.com/x", "method": "GET"}`.

use super::FetchRequest;
use crate::capability::Op;
use crate::capability::kind::{OpKind, portable_schema, variant_schema};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum PlanOp {
    NetFetch {
        /// An http or https URL.
        url: String,
        /// The HTTP method (default GET).
        method: Option<String>,
        /// Request headers: `[[name, value], ...]`, or an object of names
        /// to values.
        #[serde(default)]
        headers: Headers,
        /// The request body, as text.
        body: Option<String>,
    },
}

/// Headers as pairs (the order kept) or as an object (as MCP clients send
/// them).
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
enum Headers {
    Pairs(Vec<(String, String)>),
    Object(BTreeMap<String, String>),
}

impl<'de> Deserialize<'de> for Headers {
    /// By hand, for an error that names both forms (an untagged enum's
    /// says only that nothing matched).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const FORM: &str = "headers must be [[name, value], ...] or an object of names to values";
        match Value::deserialize(d)? {
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(Headers::Pairs)
                .map_err(|e| serde::de::Error::custom(format!("{FORM}: {e}"))),
            v @ Value::Object(_) => serde_json::from_value(v)
                .map(Headers::Object)
                .map_err(|e| serde::de::Error::custom(format!("{FORM}: {e}"))),
            _ => Err(serde::de::Error::custom(FORM)),
        }
    }
}

impl Default for Headers {
    fn default() -> Self {
        Headers::Pairs(Vec::new())
    }
}

impl Headers {
    fn pairs(self) -> Vec<(String, String)> {
        match self {
            Headers::Pairs(p) => p,
            Headers::Object(o) => o.into_iter().collect(),
        }
    }
}

/// The arguments of a fetch in a plan, as a JSON schema (none for the
/// socket ops, which no plan may name).
pub(crate) fn plan_schema(kind: OpKind) -> Value {
    if !kind.plannable() {
        return Value::Null;
    }
    variant_schema(portable_schema::<PlanOp>(), kind)
}

/// The fetch a plan object asks for.
pub(crate) fn from_plan(kind: OpKind, v: Value) -> Result<Op, String> {
    if !kind.plannable() {
        return Err(format!(
            "{kind} is a component's socket call, decided when the component makes it; \
             a plan cannot open a socket (ops: {})",
            crate::capability::plan_ops()
        ));
    }
    let PlanOp::NetFetch {
        url,
        method,
        headers,
        body,
    } = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let method = method.unwrap_or_else(|| "GET".into()).to_ascii_uppercase();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!(
            "method {} is not an HTTP method",
            crate::bound::quote(&method)
        ));
    }
    Ok(Op::Net(FetchRequest {
        method,
        url,
        headers: headers.pairs(),
        body: body.unwrap_or_default().into_bytes(),
        redirects: Default::default(),
        timeouts: Default::default(),
    }))
}

/// `GET url`; a lookup of a name; a connection or a UDP peer at
/// `host:port`, or a bind of `tcp://ip:port` (`udp://`), the rules alone
/// deciding it (no address dialled, nothing bound).
pub(crate) fn aimed_at(kind: OpKind, target: String) -> Op {
    let socket = match kind {
        OpKind::NetLookup => return Op::Socket(super::SocketOp::lookup(target)),
        OpKind::NetConnect => super::SocketOp::peer_to(super::Scheme::Tcp, &target),
        OpKind::NetDatagram => super::SocketOp::peer_to(super::Scheme::Udp, &target),
        OpKind::NetListen => super::SocketOp::bind_to(&target),
        _ => return Op::fetch(target),
    };
    match socket {
        Some(op) => Op::Socket(op),
        None => Op::Invalid {
            op: kind.name().to_string(),
            reason: format!(
                "{} is not {}",
                crate::bound::quote(&target),
                if kind == OpKind::NetListen {
                    "tcp://ip:port or udp://ip:port"
                } else {
                    "host:port"
                }
            ),
        },
    }
}
