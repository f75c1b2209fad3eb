//! The capability check: which rule allows an op, or the denial. Pure: no
//! budget charged, nothing touched. Each capability decides its own
//! requests (`capability::fs`, `net`, `tools`); the op hands itself to its
//! capability ([`Op::request`](crate::Op)).

use super::Sandbox;
use crate::capability::{Held, Permit};
use crate::op::Op;
use crate::violation::Denial;

impl Sandbox {
    /// Decide whether the grant allows `op`, without charging budgets or
    /// performing anything. The permit names the rule that allows it
    /// ([`Permit::rule`]). This is the same check [`Sandbox::run`] applies,
    /// request bounds included.
    pub fn check(&self, op: &Op) -> Result<Permit, Denial> {
        op.check(&self.held())
    }

    /// The tools a call can reach now: allowed (by the grant, or approved
    /// during this run) and registered. A tool the grant allows but no
    /// implementation backs would only be refused: it is not listed.
    ///
    /// ```
    /// use sbx_wasm::{Capabilities, Sandbox, Services};
    /// use sbx_wasm::tools::{ToolError, ToolRegistry};
    ///
    /// let caps = Capabilities::builder().allow_tool("upper").allow_tool("ghost").build()?;
    /// let mut tools = ToolRegistry::new();
    /// tools.register("upper", |s: &str| Ok::<_, ToolError>(s.to_uppercase()));
    /// let sandbox = Sandbox::builder(caps).services(Services::new().tools(tools)).build()?;
    /// assert_eq!(sandbox.reachable_tools(), ["upper"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reachable_tools(&self) -> Vec<String> {
        let held = self.held();
        held.allowed_tools
            .iter()
            .filter(|t| held.tools.get(t).is_some())
            .cloned()
            .collect()
    }

    /// What a model (or a script) is told of each tool
    /// [`Sandbox::reachable_tools`] lists: its description and the JSON
    /// schema of its input, sorted by name.
    pub fn reachable_tool_definitions(&self) -> Vec<crate::tools::ToolDefinition> {
        let held = self.held();
        held.tools.definitions(held.allowed_tools)
    }

    /// When the run started in real time, if its clock is the real one
    /// (read when the gate was built; an injected clock's start says
    /// nothing of real time). For a wasm run's wall-clock backstop.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn real_start(&self) -> Option<std::time::Instant> {
        (!self.services.has_clock()).then(|| crate::services::real_origin() + self.start)
    }

    /// Time on the injected clock since the run started (one reading).
    pub(crate) fn elapsed_now(&self) -> std::time::Duration {
        self.services.now().saturating_sub(self.start)
    }

    /// Whether output past `max_output_bytes` was refused (a hard limit,
    /// whichever writer met it). For a wasm run's report.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn output_breached(&self) -> bool {
        self.output.breached()
    }

    /// The grant and the handles opened for it, as capabilities see them.
    pub(crate) fn held(&self) -> Held<'_> {
        Held {
            mounts: &self.mounts,
            // Widened by what the run's approver approved ([ask]), if
            // anything: only this run's view, never the grant.
            egress: (self.asked.as_ref().and_then(|a| a.egress.as_ref()))
                .unwrap_or(self.caps.egress()),
            allowed_tools: (self.asked.as_ref().and_then(|a| a.tools.as_ref()))
                .unwrap_or(self.caps.tools()),
            tools: &self.services.tools,
            resolver: &*self.services.resolver,
            net: &self.services.net,
            kv_grant: self.caps.kv(),
            kv: &*self.services.kv,
            cancel: self.cancel.as_ref(),
            tool_cancel: &self.tool_cancel,
            secrets: &self.secrets,
            flow: &self.flow,
            results_to_caller: self.results_to_caller,
        }
    }

    /// The check of a file op performed through a descriptor of the mount
    /// at guest path `via` (the WASI door); other ops as [`Sandbox::check`].
    pub(super) fn check_via(&self, op: &Op, via: &str) -> Result<Permit, Denial> {
        match op {
            Op::Fs(r) => self.mounts.check_via(r, via),
            _ => self.check(op),
        }
    }
}
