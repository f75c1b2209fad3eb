//! Asking at run time: requests outside the grant that whoever runs the
//! guest may approve while it runs.
//!
//! A grant's `[ask]` section ([`AskGrant`]) names what may be asked for:
//! egress rules (`net`, in the `[net] allow` form) and tools (`tools`).
//! When the gate denies a fetch only because no egress rule covers it, or
//! a tool call only because the tool is not on the allow-list, and an
//! `[ask]` entry covers it, the gate puts a [`Question`] to the run's
//! [`Approver`] (given in [`Services::approver`](crate::Services::approver))
//! and waits for its [`Answer`]:
//!
//! - approved, the request goes on, with every other check as for a granted
//!   one (request bounds, the resolved address, the pinned dial, secrets
//!   only where declared), and so does every later request to the same
//!   origin (or tool) in this run, never more: another host under a
//!   wildcard `[ask]` rule is asked about in its turn. The audit's rule
//!   says `ORIGIN (approved at run time, [ask] RULE)`;
//! - refused (or no answer within the wall time left, or the run
//!   cancelled), it is denied with the usual violation, its message saying
//!   what was asked and why it was refused, and the run is not asked again
//!   about the same target.
//!
//! No `[ask]` entry, or no approver, means no question: the denial is the
//! grant's as always. A run asks at most `max_questions` times (default
//! [`DEFAULT_MAX_QUESTIONS`]); past that, requests are denied without
//! asking, so a hostile guest cannot flood whoever answers.

use crate::capability::OpKind;
use crate::capability::net::EgressRule;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

/// Questions one run may ask when the grant does not say.
pub const DEFAULT_MAX_QUESTIONS: u32 = 3;

/// The most questions a grant may let one run ask.
pub const LIMIT_MAX_QUESTIONS: u32 = 100;

/// What a grant lets a run ask for (the caps file's `[ask]`). Empty by
/// default: nothing is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskGrant {
    pub(crate) net: Vec<EgressRule>,
    pub(crate) tools: BTreeSet<String>,
    pub(crate) max_questions: u32,
}

impl Default for AskGrant {
    fn default() -> Self {
        AskGrant {
            net: Vec::new(),
            tools: BTreeSet::new(),
            max_questions: DEFAULT_MAX_QUESTIONS,
        }
    }
}

impl AskGrant {
    /// Egress rules an approver may add for the run.
    pub fn net(&self) -> &[EgressRule] {
        &self.net
    }

    /// Tools an approver may allow for the run.
    pub fn tools(&self) -> &BTreeSet<String> {
        &self.tools
    }

    /// The most questions one run may ask.
    pub fn max_questions(&self) -> u32 {
        self.max_questions
    }

    /// Whether nothing may be asked for.
    pub fn is_empty(&self) -> bool {
        self.net.is_empty() && self.tools.is_empty()
    }
}

/// What a run asks: to perform an op of `kind` on `target` (a fetch's
/// origin, or a tool's name), which the grant's `[ask]` entry `entry`
/// covers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Question {
    /// `net_fetch` or `tool_call`.
    pub kind: OpKind,
    /// `scheme://host:port` of a fetch, or the tool's name.
    pub target: String,
    /// The `[ask]` entry that covers it (an egress rule, or the tool name).
    pub entry: String,
}

impl fmt::Display for Question {
    /// `fetch from https://api.example.org:443` or `call the tool lookup`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            OpKind::NetFetch => write!(f, "fetch from {}", self.target),
            _ => write!(f, "call the tool {}", self.target),
        }
    }
}

/// An approver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// Go on, for this origin (or tool), for the rest of the run.
    Approved,
    /// Denied, with why (shown to the guest and kept in the audit).
    Refused(String),
}

/// Whoever answers a run's questions: a person through a client (the MCP
/// door asks by elicitation), a policy service, a test.
///
/// `approve` is called on the guest's own thread, which waits: it should
/// answer within `timeout` (the wall time left; the gate treats a later
/// answer as none) and may give up when `cancel` is thrown.
pub trait Approver: Send + Sync {
    /// Answer `question`.
    fn approve(&self, question: &Question, limits: &AskLimits) -> Answer;
}

/// The bounds of one question.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AskLimits {
    /// The wall time the run has left.
    pub timeout: Duration,
    /// The run's cancel switch.
    pub cancel: crate::CancelHandle,
}

/// Any `Fn(&Question) -> Answer` answers questions (a fixed policy, a
/// test).
impl<F> Approver for F
where
    F: Fn(&Question) -> Answer + Send + Sync,
{
    fn approve(&self, question: &Question, _limits: &AskLimits) -> Answer {
        self(question)
    }
}

/// An approver whose answer is `f(question)`, run as a task on `runtime`
/// (an async UI, or a client asked over a protocol: the MCP door's
/// elicitation). No answer within the wall time left, or a cancel, is a
/// refusal; so is a task that ends without one.
///
/// (With the `wasm` feature, the default: it brings the async runtime.)
///
/// # Examples
///
/// ```
/// use sbx_wasm::ask::{Answer, approver_async};
/// use sbx_wasm::{Capabilities, Op, Sandbox, Services};
///
/// let rt = tokio::runtime::Runtime::new()?;
/// let approver = approver_async(rt.handle().clone(), |q| async move {
///     Answer::Refused(format!("{q}: not in this test"))
/// });
/// let caps = Capabilities::builder().ask_tool("lookup").build()?;
/// let services = Services::new().approver(approver);
/// let mut sandbox = Sandbox::builder(caps).services(services).build()?;
/// let denied = sandbox.run(Op::tool("lookup", "x"));
/// assert!(denied.denial.unwrap().message.contains("not in this test"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "wasm")]
pub fn approver_async<F, Fut>(runtime: tokio::runtime::Handle, f: F) -> std::sync::Arc<dyn Approver>
where
    F: Fn(Question) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    std::sync::Arc::new(AsyncApprover { runtime, f })
}

#[cfg(feature = "wasm")]
struct AsyncApprover<F> {
    runtime: tokio::runtime::Handle,
    f: F,
}

#[cfg(feature = "wasm")]
impl<F, Fut> Approver for AsyncApprover<F>
where
    F: Fn(Question) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    fn approve(&self, question: &Question, limits: &AskLimits) -> Answer {
        use crate::capability::tools::async_tool::{Unfinished, wait_on};
        let future = (self.f)(question.clone());
        match wait_on(&self.runtime, future, limits.timeout, &limits.cancel) {
            Ok(answer) => answer,
            Err(Unfinished::Timeout) => Answer::Refused("no answer in time".into()),
            Err(Unfinished::Cancelled) => Answer::Refused("the run was cancelled".into()),
            Err(Unfinished::Lost) => Answer::Refused("the approver ended without an answer".into()),
        }
    }
}
