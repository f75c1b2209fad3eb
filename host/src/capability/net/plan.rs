//! The network capability's plan form:
//! `{"op": "net_fetch", "url": "https://api.example.com/x", "method": "GET"}`.

use super::FetchRequest;
use crate::capability::Op;
use serde::Deserialize;
use serde_json::Value;

/// Op names of the network capability in plans.
pub(crate) const PLAN_OPS: &[&str] = &["net_fetch"];

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum PlanOp {
    NetFetch {
        url: String,
        method: Option<String>,
        #[serde(default)]
        headers: Vec<(String, String)>,
        body: Option<String>,
    },
}

/// The fetch a plan object asks for.
pub(crate) fn from_plan(_kind: &str, v: Value) -> Result<Op, String> {
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
        headers,
        body: body.unwrap_or_default().into_bytes(),
    }))
}

/// `GET url`.
pub(crate) fn aimed_at(_kind: &str, url: String) -> Op {
    Op::fetch(url)
}
