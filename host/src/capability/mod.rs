//! The capabilities a grant may hold, one folder each, and [`Op`], the one
//! request type the gate takes: each variant is one capability's request.
//!
//! - [`fs`]: mounts: the path defense, cap-std handles, file effects;
//! - [`net`]: egress: request bounds, rules, special addresses, the pinned
//!   dial, redirects;
//! - [`tools`]: the allow-list and the registry of tool implementations.
//!
//! Each folder holds the capability's request type, its caps-file section
//! (`config.rs`), its check (which rule allows a request, or the denial),
//! its effect (performing an allowed request through the handles the grant
//! opened), its plan form (`plan.rs`) and, where it needs one, what it
//! needs from the kernel wall (`kernel.rs`). Capabilities depend on no door
//! and no front end: the wasm door holds each interface's adapter
//! (`wasm/imports/`), the kernel wall reads `kernel.rs`, and the grant
//! (`crate::caps`) reads `config.rs`. This file is the registry: the
//! [`Op`] and [`Output`] variants of
//! each capability and the one `match` that hands a request to its
//! capability (`Op::request`); the gate, the plan door and the audit go
//! through that.
//!
//! Each check returns a [`Permit`], the proof its effect needs: only a
//! check can make one, a capability's `perform` takes one by value, and it
//! carries what the check found (the mount and the path below it, the
//! parsed URL, the tool), so no effect runs without its check and none
//! decides twice. It lives here, beside the registry, because every
//! capability both makes and takes it.
//!
//! Budgets are not a capability but meters ([`crate::budget`]); the gate
//! ([`crate::gate`]) charges them around every capability's check and
//! effect.

pub mod fs;
mod kind;
pub mod kv;
pub mod net;
mod output;
pub mod tools;

pub use kind::{OpKind, OpName};

#[cfg(test)]
pub(crate) mod tests;

pub use output::{Content, Output};

use crate::failure::Failure;
use crate::violation::{Denial, Violation};
use fs::{FsOp, MountTable};
use net::FetchRequest;
use serde_json::Value;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tools::{Tool, ToolCall};
use url::Url;

/// One model-proposed operation.
///
/// # Examples
///
/// ```
/// use sbx_wasm::Op;
///
/// let op = Op::write("/work/out/r.txt", "text");
/// assert_eq!(op.kind(), "fs_write");
/// assert_eq!(op.target(), "/work/out/r.txt");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A file op, decided by the mounts.
    Fs(FsOp),
    /// An HTTP request, decided by the egress rules.
    Net(FetchRequest),
    /// A component's name lookup or TCP connection (`wasi:sockets`),
    /// decided by the egress rules' `tcp://` rules.
    Socket(net::SocketOp),
    /// A tool call, decided by the tool allow-list.
    Tool(ToolCall),
    /// A key-value op, decided by the grant's `[kv]` store.
    Kv(kv::KvOp),
    /// A proposal that could not be understood; always `invalid_request`.
    Invalid {
        /// The op name as given, if any.
        op: String,
        /// What was wrong.
        reason: String,
    },
}

/// What every capability's request answers to. The gate runs a request
/// through these in order: [`check`](Request::check), which alone can make
/// the [`Permit`], then [`perform`](Request::perform), which takes it: no
/// effect without its check, and no effect decides again.
pub(crate) trait Request {
    /// The op's kind (its stable name is in plans and audit logs).
    fn kind(&self) -> OpKind;
    /// What the op is aimed at (a path, a URL, a tool name).
    fn target(&self) -> &str;
    /// The permit naming what the grant lets it reach and the rule that
    /// allows it, or the denial. Pure: no budget charged, nothing touched.
    fn check(&self, held: &Held<'_>) -> Result<Permit, Denial>;
    /// Perform the allowed request, reaching only what `permit` names,
    /// within what the gate lends.
    fn perform(
        &self,
        permit: Permit,
        held: &Held<'_>,
        lent: &Lent<'_>,
    ) -> (Result<Output, Failure>, Trace);
    /// Whether the effect may take a good part of the wall budget (the gate
    /// reads the clock again after it).
    fn slow(&self) -> bool {
        false
    }
}

/// What the audit log records about an effect beyond the rule that allowed
/// it. Only a fetch fills it in today: the rule and address of its last
/// hop, the status, the redirects followed, the headers dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Trace {
    /// The rule that allowed the last hop.
    pub rule: Option<String>,
    /// The address actually dialled for the last hop.
    pub address: Option<SocketAddr>,
    /// The last status received.
    pub status: Option<u16>,
    /// Redirects followed.
    pub redirects: u32,
    /// Request headers dropped at a cross-origin redirect (names only).
    pub dropped_headers: Vec<String>,
    /// Secrets put into the request (names only).
    pub secrets: Vec<String>,
    /// Why a placeholder was left as it was, and which secrets' echoes were
    /// taken out of the response (names and reasons, never values).
    pub secret_notes: Vec<String>,
    /// The effect had begun when it was cut short (a request on its way, a
    /// tool started), and how far it is known to have got: a budget or a
    /// cancel that ends it then is recorded as `interrupted`, never as
    /// `denied`, since the effect may have happened.
    pub begun: Option<String>,
    /// Bytes charged to `max_sent_bytes` for the request, every hop (a
    /// replay charges them again, so its report says what the run sent).
    pub sent_bytes: u64,
}

/// What the gate hands a capability: its part of the grant, its backend
/// and the handles the gate opened. Pieces, not the whole grant: the grant
/// (`crate::caps`) and the backends (`crate::Services`) are made of the
/// capabilities' types, so a capability never reaches for them whole. A
/// capability added later adds its fields here and one line where the gate
/// builds it (`gate/check.rs`).
pub(crate) struct Held<'a> {
    pub(crate) mounts: &'a MountTable,
    pub(crate) egress: &'a net::Egress,
    /// Tool names the grant allows.
    pub(crate) allowed_tools: &'a std::collections::BTreeSet<String>,
    /// Tool implementations (a tool must be allowed and registered).
    pub(crate) tools: &'a tools::ToolRegistry,
    pub(crate) resolver: &'a dyn net::Resolve,
    pub(crate) net: &'a Arc<dyn net::Net>,
    /// The grant's key-value store, if it holds one, and its backend.
    pub(crate) kv_grant: Option<&'a kv::KvGrant>,
    pub(crate) kv: &'a dyn kv::KvStore,
    /// The run's cancel switch, when it has one.
    pub(crate) cancel: Option<&'a crate::CancelHandle>,
    /// The switch a tool is lent when there is no `cancel` (made once a
    /// run, at its first tool call; nothing outside the run throws it).
    pub(crate) tool_cancel: &'a std::sync::OnceLock<crate::CancelHandle>,
    /// The grant's secrets with this run's placeholders.
    pub(crate) secrets: &'a net::RunSecrets,
    /// The run's label mark, which decides each redirect hop as a sink of
    /// its own.
    pub(crate) flow: &'a crate::flow::FlowState,
    /// Whether op results go back to the caller (a plan), not to a guest.
    pub(crate) results_to_caller: bool,
}

/// What the gate lends an effect from the budgets.
pub(crate) struct Lent<'a> {
    /// Time left of `max_wall`.
    pub(crate) wall_left: Duration,
    /// Bytes the caller may still receive (`max_output_bytes`).
    pub(crate) output_left: u64,
    /// Charge the write quota (bytes written, files created) before the
    /// effect, or say which part is spent.
    pub(crate) quota: &'a dyn Fn(u64, u64) -> Result<(), Denial>,
    /// The refusal of a result over the output budget.
    pub(crate) over_budget: &'a dyn Fn() -> Denial,
    /// Charge bytes about to be sent to the network (`max_sent_bytes`)
    /// before they go, or say it is spent.
    pub(crate) sent: &'a dyn Fn(u64) -> Result<(), Denial>,
}

/// A capability's plan form: the parse of one plan object carrying one of
/// its op kinds (the kinds whose [`OpKind::capability`] it is) into an
/// [`Op`].
struct PlanForm {
    capability: &'static str,
    parse: fn(OpKind, Value) -> Result<Op, String>,
    /// The op of one of its kinds aimed at a target, with an empty payload.
    aimed: fn(OpKind, String) -> Op,
    /// The JSON schema of the plan arguments of one of its kinds.
    schema: fn(OpKind) -> Value,
}

/// The plan forms, one per capability.
static PLAN_FORMS: [PlanForm; 4] = [
    PlanForm {
        capability: "fs",
        parse: fs::from_plan,
        aimed: fs::aimed_at,
        schema: fs::plan_schema,
    },
    PlanForm {
        capability: "net",
        parse: net::from_plan,
        aimed: net::aimed_at,
        schema: net::plan_schema,
    },
    PlanForm {
        capability: "tools",
        parse: tools::from_plan,
        aimed: tools::aimed_at,
        schema: tools::plan_schema,
    },
    PlanForm {
        capability: "kv",
        parse: kv::from_plan,
        aimed: kv::aimed_at,
        schema: kv::plan_schema,
    },
];

/// The plan form of `kind`'s capability.
fn form_of(kind: OpKind) -> Option<&'static PlanForm> {
    PLAN_FORMS
        .iter()
        .find(|f| f.capability == kind.capability())
}

/// Op names a plan may use, every capability's, comma-separated.
pub fn plan_ops() -> String {
    let names: Vec<&str> = OpKind::ALL
        .iter()
        .filter(|k| k.plannable())
        .map(|k| k.name())
        .collect();
    names.join(", ")
}

/// The plan arguments of `kind`, from its capability's plan form.
fn plan_schema(kind: OpKind) -> Value {
    form_of(kind).map_or(Value::Null, |form| (form.schema)(kind))
}

/// The op a plan object with op name `kind` asks for, or why it cannot be.
pub(crate) fn op_from_plan(kind: &str, v: Value) -> Result<Op, String> {
    let form = OpKind::from_name(kind).and_then(|k| Some((k, form_of(k)?)));
    match form {
        Some((kind, form)) => (form.parse)(kind, v),
        None => Err(format!(
            "unknown op {} (ops: {})",
            crate::bound::quote(kind),
            plan_ops()
        )),
    }
}

/// The op `verb` aimed at `target`, with an empty payload (no content, no
/// body, no input): what `sbx-wasm check --explain` decides. `verb` is a
/// plan op name (`fs_read`, `net_fetch`, `tool_call`, ...) or its short
/// form (`read`, `fetch`, `tool`, ...).
///
/// # Examples
///
/// ```
/// use sbx_wasm::plan::op_aimed_at;
///
/// assert_eq!(op_aimed_at("read", "/work/a").unwrap(), sbx_wasm::Op::read("/work/a"));
/// assert_eq!(op_aimed_at("net_fetch", "https://x.example/").unwrap().kind(), "net_fetch");
/// assert!(op_aimed_at("launch", "x").is_err());
/// ```
pub fn op_aimed_at(verb: &str, target: &str) -> Result<Op, String> {
    let names = |n: &str| {
        n == verb
            || n.strip_suffix(verb).is_some_and(|p| p.ends_with('_'))
            || n.strip_prefix(verb).is_some_and(|p| p.starts_with('_'))
    };
    let found = OpKind::ALL.iter().find(|k| names(k.name()));
    if let Some((kind, form)) = found.and_then(|k| Some((*k, form_of(*k)?))) {
        return Ok((form.aimed)(kind, target.to_string()));
    }
    Err(format!(
        "unknown op {}; use one of {} (or its short form: read, fetch, tool, ...)",
        crate::bound::quote(verb),
        plan_ops()
    ))
}

impl Op {
    /// The capability request inside, or `None` for [`Op::Invalid`]. The
    /// one place an op is handed to its capability.
    pub(crate) fn request(&self) -> Option<&dyn Request> {
        match self {
            Op::Fs(r) => Some(r),
            Op::Net(r) => Some(r),
            Op::Socket(r) => Some(r),
            Op::Tool(r) => Some(r),
            Op::Kv(r) => Some(r),
            Op::Invalid { .. } => None,
        }
    }

    /// Read `path`.
    pub fn read(path: impl Into<String>) -> Op {
        Op::Fs(FsOp::Read { path: path.into() })
    }
    /// Write `content` to `path`.
    pub fn write(path: impl Into<String>, content: impl Into<Vec<u8>>) -> Op {
        Op::Fs(FsOp::Write {
            path: path.into(),
            content: content.into(),
        })
    }
    /// List `path`.
    pub fn list(path: impl Into<String>) -> Op {
        Op::Fs(FsOp::List { path: path.into() })
    }
    /// Stat `path`.
    pub fn stat(path: impl Into<String>) -> Op {
        Op::Fs(FsOp::Stat { path: path.into() })
    }
    /// Remove `path`.
    pub fn remove(path: impl Into<String>) -> Op {
        Op::Fs(FsOp::Remove { path: path.into() })
    }
    /// Create folder `path`.
    pub fn mkdir(path: impl Into<String>) -> Op {
        Op::Fs(FsOp::Mkdir { path: path.into() })
    }
    /// `GET url`.
    pub fn fetch(url: impl Into<String>) -> Op {
        Op::Net(FetchRequest {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            redirects: Default::default(),
            timeouts: Default::default(),
        })
    }
    /// Call tool `name` with `input`.
    pub fn tool(name: impl Into<String>, input: impl Into<String>) -> Op {
        Op::Tool(ToolCall {
            name: name.into(),
            input: input.into(),
        })
    }

    /// The op's stable name, as in plans and audit logs.
    pub fn kind(&self) -> &'static str {
        self.op_kind().map_or("invalid", OpKind::name)
    }

    /// The op's name in audit records and results ([`OpName::Invalid`]
    /// for [`Op::Invalid`]).
    pub fn name(&self) -> OpName {
        self.op_kind().map_or(OpName::Invalid, OpName::Gated)
    }

    /// The op's kind, or `None` for [`Op::Invalid`].
    pub fn op_kind(&self) -> Option<OpKind> {
        self.request().map(Request::kind)
    }

    /// What the op is aimed at: a path, a URL or a tool name.
    pub fn target(&self) -> &str {
        match (self.request(), self) {
            (Some(r), _) => r.target(),
            (None, Op::Invalid { op, .. }) => op,
            (None, _) => "",
        }
    }

    /// [`target`](Op::target), taken out of the op (moved where the op
    /// holds it as a string of its own, copied otherwise).
    pub(crate) fn into_target(self) -> String {
        match self {
            Op::Tool(call) => call.name,
            Op::Invalid { op, .. } => op,
            other => other.target().to_string(),
        }
    }

    /// The check of this op under the grant `held`.
    pub(crate) fn check(&self, held: &Held<'_>) -> Result<Permit, Denial> {
        match (self.request(), self) {
            (Some(r), _) => r.check(held),
            (None, Op::Invalid { reason, .. }) => {
                Err(Denial::new(Violation::InvalidRequest, reason.clone()))
            }
            (None, _) => Err(Denial::new(Violation::InvalidRequest, "unknown op")),
        }
    }
}

/// What a check allowed, and the rule that allowed it.
///
/// Made only by a capability's check ([`Sandbox::check`](crate::Sandbox::check)
/// hands one out so a caller can see the rule); the gate hands it to the
/// effect, which performs exactly what it names.
pub struct Permit {
    rule: String,
    pub(crate) grant: Grant,
}

/// What an effect may reach, as its check found it.
pub(crate) enum Grant {
    /// A file op through the mount at `mount` (its index in the sandbox's
    /// mount table), at `rel` below it.
    Fs {
        /// Index in the mount table.
        mount: usize,
        /// The path below the mount.
        rel: String,
        /// Whether the mount allows writing.
        write: bool,
    },
    /// A fetch of the URL as the check parsed it (the first hop: each
    /// redirect is decided again as a hop of its own).
    Net(Url),
    /// A TCP connection to this address, and no other.
    Socket(SocketAddr),
    /// A lookup of this name by the broker's resolver.
    Lookup(String),
    /// A call of the registered tool the check found.
    Tool(Arc<dyn Tool>),
    /// A call of the run's key-value store, within these limits.
    Kv(kv::KvGrant),
    /// Nothing to reach: the answer comes from the grant itself (a folder
    /// above the mounts), never from the host.
    Nothing,
}

impl Permit {
    /// A permit for `grant` under `rule`. Only the checks call this.
    pub(crate) fn new(rule: String, grant: Grant) -> Self {
        Permit { rule, grant }
    }

    /// The rule that allowed the op, as the audit records it.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// Whether the permit lets a file op write (the mount it names is
    /// writable); `false` for every other permit.
    pub(crate) fn writes(&self) -> bool {
        matches!(self.grant, Grant::Fs { write: true, .. })
    }

    /// The rule, moved out for the audit record (the effect needs only the
    /// grant).
    pub(crate) fn take_rule(&mut self) -> String {
        std::mem::take(&mut self.rule)
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::Fs { rel, write, .. } => format!("fs {rel:?} write={write}"),
            Grant::Net(url) => format!("net {url}"),
            Grant::Socket(addr) => format!("connect {addr}"),
            Grant::Lookup(name) => format!("lookup {name:?}"),
            Grant::Tool(_) => "tool".to_string(),
            Grant::Kv(g) => format!("kv {g:?}"),
            Grant::Nothing => "nothing".to_string(),
        };
        f.debug_struct("Permit")
            .field("rule", &self.rule)
            .field("grant", &grant)
            .finish()
    }
}

impl fmt::Display for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule)
    }
}
