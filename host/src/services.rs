//! The backends a run performs its allowed effects with, in one value.
//!
//! The grant ([`Capabilities`](crate::Capabilities)) says *what* a run may
//! do; [`Services`] says *with what* it is done: which network client
//! sends an allowed fetch, which resolver looks up its host, which clock
//! the wall budget reads, which tools answer an allowed call. The gate
//! ([`SandboxBuilder::services`](crate::SandboxBuilder::services)) and a
//! component run ([`RunOptions::services`](crate::wasm::RunOptions::services))
//! take the same value whole, so neither copies the other field by field
//! and a new backend is one field here.

use crate::ask::Approver;
use crate::budget::Clock;
use crate::capability::kv::{KvStore, MemoryKv};
use crate::net::{HttpNet, Net, Resolve, SystemResolver};
use crate::tools::ToolRegistry;
use std::fmt;
use std::sync::Arc;

/// The backends of a run. Cheap to clone (each backend is shared), so one
/// value can serve many runs. Every default:
///
/// | backend | default |
/// |---|---|
/// | [`net`](Services::net) | [`HttpNet`] (ureq + rustls, no proxy, no redirects of its own: the gate follows each hop) |
/// | [`resolver`](Services::resolver) | [`SystemResolver`] (the system's name lookup) |
/// | [`clock`](Services::clock) | none given: the system's monotonic clock (as [`MonotonicClock`](crate::MonotonicClock) reads it), the run timed from when the sandbox is built (a 1 ms [`TickClock`](crate::TickClock) for a deterministic component run) |
/// | [`tools`](Services::tools) | an empty [`ToolRegistry`] (every tool call `tool_denied`) |
/// | [`kv`](Services::kv) | a new, empty [`MemoryKv`] (its data in the host's memory, bounded by the grant's `[kv]` `max_bytes`) |
/// | [`approver`](Services::approver) | none: nothing is asked, whatever the grant's `[ask]` says (see [`crate::ask`]) |
///
/// A clone shares each backend: runs given clones of one `Services`
/// share its key-value store (a session's runs); a run given
/// `Services::default()` has a store of its own.
///
/// A backend only performs what the gate has already allowed: replacing
/// one changes how an allowed effect is carried out, never what is
/// allowed.
///
/// # Examples
///
/// ```
/// use sbx_wasm::{Capabilities, ManualClock, Op, Sandbox, Services, Violation};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock = Arc::new(ManualClock::new());
/// let caps = Capabilities::builder().max_wall(Duration::from_secs(1)).build()?;
/// let mut sandbox = Sandbox::builder(caps)
///     .services(Services::default().clock(clock.clone()))
///     .build()?;
/// clock.advance(Duration::from_secs(2));
/// let late = sandbox.run(Op::read("/work/a.txt"));
/// assert_eq!(late.violation(), Some(Violation::MaxWall));
/// assert!(late.hard());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Services {
    pub(crate) net: Arc<dyn Net>,
    pub(crate) resolver: Arc<dyn Resolve>,
    pub(crate) clock: Option<Arc<dyn Clock>>,
    pub(crate) tools: ToolRegistry,
    pub(crate) kv: Arc<dyn KvStore>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

impl Default for Services {
    fn default() -> Self {
        // Both hold no state: one of each for the process, lent to every
        // run, instead of two allocations a run keeps to its end.
        static NET: std::sync::OnceLock<Arc<HttpNet>> = std::sync::OnceLock::new();
        static RESOLVER: std::sync::OnceLock<Arc<SystemResolver>> = std::sync::OnceLock::new();
        Services {
            net: NET.get_or_init(|| Arc::new(HttpNet::new())).clone(),
            resolver: RESOLVER.get_or_init(|| Arc::new(SystemResolver)).clone(),
            clock: None,
            tools: ToolRegistry::new(),
            kv: Arc::new(MemoryKv::new()),
            approver: None,
        }
    }
}

impl Services {
    /// The defaults in the table above.
    pub fn new() -> Self {
        Self::default()
    }

    /// Perform allowed fetches with `net` (each hop already checked and
    /// resolved by the gate; see [`Net`]).
    pub fn net(mut self, net: Arc<dyn Net>) -> Self {
        self.net = net;
        self
    }

    /// Resolve host names with `resolver`: each fetch resolves once, and
    /// the connection goes to an address the gate checked.
    pub fn resolver(mut self, resolver: Arc<dyn Resolve>) -> Self {
        self.resolver = resolver;
        self
    }

    /// Read wall time from `clock`: the gate's `max_wall_ms` meter, and for
    /// a component run the epoch deadline and the report's `wall_ms`. A
    /// [`ManualClock`](crate::ManualClock) lets a test or an embedder
    /// drive time. Whatever this clock says, a component run keeps a
    /// real-time backstop at `max_wall_ms`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Answer allowed tool calls from `tools` (a tool must be both allowed
    /// by the grant and registered here).
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Keep the key-value store's data in `kv` (the grant's `[kv]` section
    /// still decides whether there is a store, and how large it may grow).
    pub fn kv(mut self, kv: Arc<dyn KvStore>) -> Self {
        self.kv = kv;
        self
    }

    /// Put the run's questions (what the grant's `[ask]` lets it ask for)
    /// to `approver`. Without one, nothing is asked.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Whether a clock was given (the wasm runs ask).
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn has_clock(&self) -> bool {
        self.clock.is_some()
    }

    /// The clock's reading: the given clock's, or the process's real one
    /// (see [`real_now`]).
    pub(crate) fn now(&self) -> std::time::Duration {
        match &self.clock {
            Some(clock) => clock.now(),
            None => real_now(),
        }
    }

    /// The tools registered (to list them, or to add to them).
    pub fn tool_registry(&self) -> &ToolRegistry {
        &self.tools
    }
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Services")
            .field("clock", &self.clock.as_ref().map(|_| "given"))
            .field("tools", &self.tools.names().collect::<Vec<_>>())
            .field("approver", &self.approver.as_ref().map(|_| "given"))
            .finish_non_exhaustive()
    }
}

/// The real clock when no clock is given: time since one origin for the
/// process. A gate reads only differences from its own start, so every run
/// can share the origin; read in place, not through a shared reference
/// count that every run's start and end would write (two threads running
/// at once then took a cache miss at each reading).
pub(crate) fn real_now() -> std::time::Duration {
    real_origin().elapsed()
}

/// The instant [`real_now`] counts from.
pub(crate) fn real_origin() -> std::time::Instant {
    // Alone on its cache line: nothing written beside it.
    #[repr(align(64))]
    struct Origin(std::sync::OnceLock<std::time::Instant>);
    static ORIGIN: Origin = Origin(std::sync::OnceLock::new());
    *ORIGIN.0.get_or_init(std::time::Instant::now)
}
