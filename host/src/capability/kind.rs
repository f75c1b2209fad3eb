//! [`OpKind`]: every op a grant can be asked for, as one closed set, with
//! what each consumer needs to know about it (its plan name, its
//! capability, whether it writes, a one-line summary, its plan arguments'
//! JSON schema). The plan parser, the audit, `policy learn`/`diff`, the
//! MCP door's single-op tools and the CLI read it here, so a new op is
//! added once and a consumer that forgets it fails to compile (every
//! `match` on it is exhaustive inside the crate).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The kind of an [`Op`](crate::Op), as plans, audit logs and reports name
/// it (`snake_case`: `fs_read`, `net_fetch`, ...).
///
/// # Examples
///
/// ```
/// use sbx_wasm::OpKind;
///
/// let kind = OpKind::from_name("fs_write").unwrap();
/// assert_eq!(kind, OpKind::FsWrite);
/// assert_eq!(kind.capability(), "fs");
/// assert!(kind.writes());
/// assert_eq!(sbx_wasm::Op::write("/w/a", "x").op_kind(), Some(kind));
/// // The arguments a plan gives it, as a JSON schema.
/// assert_eq!(kind.plan_schema()["required"], serde_json::json!(["path"]));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// Read a file (`fs_read`).
    FsRead,
    /// Write a file (`fs_write`).
    FsWrite,
    /// List a folder (`fs_list`).
    FsList,
    /// Stat a path (`fs_stat`).
    FsStat,
    /// Remove a file or an empty folder (`fs_remove`).
    FsRemove,
    /// Make a folder (`fs_mkdir`).
    FsMkdir,
    /// An HTTP request (`net_fetch`).
    NetFetch,
    /// A component's name lookup through `wasi:sockets` (`net_lookup`).
    NetLookup,
    /// A component's TCP connection through `wasi:sockets` (`net_connect`).
    NetConnect,
    /// A component's UDP peer through `wasi:sockets` (`net_datagram`): its
    /// datagrams to and from one address, decided once a run.
    NetDatagram,
    /// A component's bind of a loopback address through `wasi:sockets`,
    /// to listen (TCP) or to receive datagrams (UDP) there (`net_listen`).
    NetListen,
    /// A tool call (`tool_call`).
    ToolCall,
    /// Read a key of the run's key-value store (`kv_get`).
    KvGet,
    /// Set a key (`kv_put`).
    KvPut,
    /// Remove a key (`kv_delete`).
    KvDelete,
    /// List keys by prefix (`kv_list`).
    KvList,
}

impl OpKind {
    /// Every kind, in the order plans list them.
    pub const ALL: &'static [OpKind] = &[
        OpKind::FsRead,
        OpKind::FsWrite,
        OpKind::FsList,
        OpKind::FsStat,
        OpKind::FsRemove,
        OpKind::FsMkdir,
        OpKind::NetFetch,
        OpKind::NetLookup,
        OpKind::NetConnect,
        OpKind::NetDatagram,
        OpKind::NetListen,
        OpKind::ToolCall,
        OpKind::KvGet,
        OpKind::KvPut,
        OpKind::KvDelete,
        OpKind::KvList,
    ];

    /// The name in plans and audit logs.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::FsRead => "fs_read",
            OpKind::FsWrite => "fs_write",
            OpKind::FsList => "fs_list",
            OpKind::FsStat => "fs_stat",
            OpKind::FsRemove => "fs_remove",
            OpKind::FsMkdir => "fs_mkdir",
            OpKind::NetFetch => "net_fetch",
            OpKind::NetLookup => "net_lookup",
            OpKind::NetConnect => "net_connect",
            OpKind::NetDatagram => "net_datagram",
            OpKind::NetListen => "net_listen",
            OpKind::ToolCall => "tool_call",
            OpKind::KvGet => "kv_get",
            OpKind::KvPut => "kv_put",
            OpKind::KvDelete => "kv_delete",
            OpKind::KvList => "kv_list",
        }
    }

    /// The kind named `name` (a plan or audit name), if any.
    pub fn from_name(name: &str) -> Option<OpKind> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The capability that decides it: `fs`, `net`, `tools` or `kv` (the
    /// grant's section, and the folder under `capability/`).
    pub fn capability(self) -> &'static str {
        match self {
            OpKind::FsRead
            | OpKind::FsWrite
            | OpKind::FsList
            | OpKind::FsStat
            | OpKind::FsRemove
            | OpKind::FsMkdir => "fs",
            OpKind::NetFetch
            | OpKind::NetLookup
            | OpKind::NetConnect
            | OpKind::NetDatagram
            | OpKind::NetListen => "net",
            OpKind::ToolCall => "tools",
            OpKind::KvGet | OpKind::KvPut | OpKind::KvDelete | OpKind::KvList => "kv",
        }
    }

    /// Whether it changes what the grant holds: a write mount's files, or
    /// the key-value store.
    pub fn writes(self) -> bool {
        match self {
            OpKind::FsWrite
            | OpKind::FsRemove
            | OpKind::FsMkdir
            | OpKind::KvPut
            | OpKind::KvDelete => true,
            OpKind::FsRead
            | OpKind::FsList
            | OpKind::FsStat
            | OpKind::NetFetch
            | OpKind::NetLookup
            | OpKind::NetConnect
            | OpKind::NetDatagram
            | OpKind::NetListen
            | OpKind::ToolCall
            | OpKind::KvGet
            | OpKind::KvList => false,
        }
    }

    /// Whether it only reads what the grant holds, reaching nothing outside
    /// the host (no fetch, no tool): safe to repeat.
    pub fn read_only(self) -> bool {
        match self {
            OpKind::FsRead | OpKind::FsList | OpKind::FsStat | OpKind::KvGet | OpKind::KvList => {
                true
            }
            OpKind::FsWrite
            | OpKind::FsRemove
            | OpKind::FsMkdir
            | OpKind::NetFetch
            | OpKind::NetLookup
            | OpKind::NetConnect
            | OpKind::NetDatagram
            | OpKind::NetListen
            | OpKind::ToolCall
            | OpKind::KvPut
            | OpKind::KvDelete => false,
        }
    }

    /// Whether a plan may ask for it. A component's socket calls
    /// (`net_lookup`, `net_connect`, `net_datagram`, `net_listen`) are
    /// decided by the gate and audited like every op, but only a socket can
    /// use what they allow, so a plan cannot name them.
    pub fn plannable(self) -> bool {
        !matches!(
            self,
            OpKind::NetLookup | OpKind::NetConnect | OpKind::NetDatagram | OpKind::NetListen
        )
    }

    /// What it does, in a few words (for a tool listing or a summary).
    pub fn summary(self) -> &'static str {
        match self {
            OpKind::FsRead => "Read a file",
            OpKind::FsWrite => "Write a file",
            OpKind::FsList => "List a folder",
            OpKind::FsStat => "Describe a path (kind, size)",
            OpKind::FsRemove => "Remove a file or an empty folder",
            OpKind::FsMkdir => "Make a folder",
            OpKind::NetFetch => "Fetch an HTTP or HTTPS URL the grant's egress rules allow",
            OpKind::NetLookup => "Look up a name a tcp or udp rule covers (a component's sockets)",
            OpKind::NetConnect => "Open a TCP connection a tcp rule allows (a component's sockets)",
            OpKind::NetDatagram => {
                "Exchange UDP datagrams with a peer a udp rule allows (a component's sockets)"
            }
            OpKind::NetListen => {
                "Bind a loopback address a listen rule allows (a component's sockets)"
            }
            OpKind::ToolCall => "Call a granted tool",
            OpKind::KvGet => "Read a key of the key-value store",
            OpKind::KvPut => "Set a key of the key-value store",
            OpKind::KvDelete => "Remove a key of the key-value store",
            OpKind::KvList => "List the keys of the key-value store by prefix",
        }
    }

    /// The JSON schema of its arguments in a plan object (every field but
    /// `op`), derived from the type the plan parser reads, so the two
    /// cannot disagree.
    pub fn plan_schema(self) -> Value {
        super::plan_schema(self)
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an audit record, a report's denial, a plan's result or a
/// `Started` event names as its op: a kind the gate decides, a guest's
/// output stream the flow rules refused, or something that was no op at
/// all. Written as the same names as ever (`fs_read`, `stdout`,
/// `invalid`), and compared with an [`OpKind`] or a name directly.
///
/// # Examples
///
/// ```
/// use sbx_wasm::{OpKind, OpName};
///
/// let name = OpName::from_name("net_fetch").unwrap();
/// assert_eq!(name, OpKind::NetFetch);
/// assert_eq!(name, "net_fetch");
/// assert_eq!(name.kind(), Some(OpKind::NetFetch));
/// assert_eq!(serde_json::to_string(&OpName::Stdout).unwrap(), r#""stdout""#);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpName {
    /// An op the gate decides (from a plan, an `sbx:agent` import, a
    /// script's call, or a WASI file call through a mount).
    Gated(OpKind),
    /// The guest's standard output, refused by the grant's flow rules.
    Stdout,
    /// The guest's standard error, refused by the grant's flow rules.
    Stderr,
    /// A request that is no op the gate knows (a plan entry that does not
    /// parse, a WASI call on a path that is not one): always refused
    /// `invalid_request`, and still charged.
    Invalid,
}

impl OpName {
    /// The name in audit logs, reports and plans.
    pub fn as_str(self) -> &'static str {
        match self {
            OpName::Gated(kind) => kind.name(),
            OpName::Stdout => "stdout",
            OpName::Stderr => "stderr",
            OpName::Invalid => "invalid",
        }
    }

    /// The op named `name`, if any.
    pub fn from_name(name: &str) -> Option<OpName> {
        match name {
            "stdout" => Some(OpName::Stdout),
            "stderr" => Some(OpName::Stderr),
            "invalid" => Some(OpName::Invalid),
            _ => OpKind::from_name(name).map(OpName::Gated),
        }
    }

    /// The kind the gate decided, if it was one.
    pub fn kind(self) -> Option<OpKind> {
        match self {
            OpName::Gated(kind) => Some(kind),
            _ => None,
        }
    }
}

impl From<OpKind> for OpName {
    fn from(kind: OpKind) -> Self {
        OpName::Gated(kind)
    }
}

impl fmt::Display for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<OpKind> for OpName {
    fn eq(&self, kind: &OpKind) -> bool {
        *self == OpName::Gated(*kind)
    }
}

impl PartialEq<str> for OpName {
    fn eq(&self, name: &str) -> bool {
        self.as_str() == name
    }
}

impl PartialEq<&str> for OpName {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

impl Serialize for OpName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for OpName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        OpName::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown op name {name:?}")))
    }
}

/// The schema of one variant, `kind`, of a plan enum tagged by `op` (as
/// schemars derives it: a `oneOf` of objects whose `op` is a constant),
/// with the tag taken out.
/// The JSON schema of `T` as tool listings show it: an optional field is
/// one that may be left out, with its one type (`"type": "string"`, not
/// `["string", "null"]`), which every client's schema dialect can take
/// (some map tool schemas onto a dialect with a single type per field).
pub(crate) fn portable_schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    drop_null_types(&mut schema);
    schema
}

/// `["X", "null"]` types become `"X"`, and `{"type": "null"}` branches of an
/// `anyOf` go (one left, it takes the `anyOf`'s place), everywhere in `v`.
fn drop_null_types(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(types)) = o.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    o.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(branches)) = o.get_mut("anyOf") {
                branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
                if branches.len() == 1 {
                    let only = branches.remove(0);
                    o.remove("anyOf");
                    if let Value::Object(only) = only {
                        o.extend(only);
                    }
                }
            }
            o.values_mut().for_each(drop_null_types);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_types),
        _ => {}
    }
}

pub(crate) fn variant_schema(whole: Value, kind: OpKind) -> Value {
    let variants = whole.get("oneOf").and_then(Value::as_array);
    let tagged = |v: &&Value| {
        let op = &v["properties"]["op"];
        op["const"] == kind.name() || op["enum"] == serde_json::json!([kind.name()])
    };
    let mut found = match variants.and_then(|vs| vs.iter().find(tagged)) {
        Some(v) => v.clone(),
        None => whole.clone(),
    };
    if let Some(p) = found.get_mut("properties").and_then(Value::as_object_mut) {
        p.remove("op");
    }
    if let Some(r) = found.get_mut("required").and_then(Value::as_array_mut) {
        r.retain(|v| v != "op");
    }
    if let (Some(defs), Some(obj)) = (whole.get("$defs"), found.as_object_mut()) {
        obj.insert("$defs".into(), defs.clone());
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct Args {
        /// Required.
        path: String,
        /// May be left out.
        content: Option<String>,
        nested: Option<Inner>,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        n: Option<u32>,
    }

    #[test]
    fn optional_fields_have_one_type_and_stay_optional() {
        let s = portable_schema::<Args>();
        let text = s.to_string();
        assert!(!text.contains("\"null\""), "{text}");
        assert_eq!(s["properties"]["content"]["type"], "string", "{text}");
        assert_eq!(s["required"], serde_json::json!(["path"]), "{text}");
        assert_eq!(
            s["$defs"]["Inner"]["properties"]["n"]["type"], "integer",
            "{text}"
        );
    }

    #[test]
    fn every_op_name_round_trips_through_its_name_and_json() {
        let mut names: Vec<OpName> = OpKind::ALL.iter().map(|&k| k.into()).collect();
        names.extend([OpName::Stdout, OpName::Stderr, OpName::Invalid]);
        for name in names {
            assert_eq!(OpName::from_name(name.as_str()), Some(name));
            let json = serde_json::to_string(&name).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<OpName>(&json).unwrap(), name);
            assert_eq!(name, name.as_str());
            assert_eq!(name.kind().map(OpName::Gated), name.kind().map(|_| name));
        }
        assert!(serde_json::from_str::<OpName>(r#""fs_chmod""#).is_err());
        assert_eq!(OpName::from_name("Fs_Read"), None);
        assert_eq!(OpName::Stdout.kind(), None);
    }
}
