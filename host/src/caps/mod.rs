//! `Capabilities`: everything a run may touch, and nothing else. Loaded from a
//! caps file or built in Rust, validated once, immutable afterwards (authority
//! only ever shrinks: a run cannot widen its own grant).
//!
//! This file is the grant's registry: one field per capability in the
//! grant, in the builder (its methods are `builder.rs`) and in the caps
//! file. Each capability's section,
//! builder methods and validation live in its folder
//! (`capability/*/config.rs`); the budget's and the environment's here
//! (`budget.rs`, `env.rs`).

mod ask;
mod budget;
mod builder;
mod derived;
#[cfg(test)]
mod derived_tests;
mod env;
mod flow;
pub(crate) mod protected;
mod room;
#[cfg(test)]
mod runner;

pub use protected::{Protected, ProtectedPaths};

use crate::ask::AskGrant;
use crate::budget::Budget;
use crate::capability::fs::Folders;
use crate::capability::fs::config::{FsSection, RequestedMounts};
use crate::capability::kv::KvGrant;
use crate::capability::kv::config::{KvSection, check_grant};
use crate::capability::net::config::{NetSection, RequestedEgress};
use crate::capability::net::secrets::Secret;
use crate::capability::net::secrets::config::{RequestedSecrets, SecretsSection};
use crate::capability::tools::config::{RequestedTools, ToolsSection};
use crate::error::CapsError;
use crate::flow::FlowPolicy;
use crate::flow::config::{FlowSection, RequestedFlow};
use crate::fs::{Access, Mount};
use crate::net::Egress;
use crate::tools::CommandTool;
use ask::{AskSection, RequestedAsk};
use budget::{BudgetSection, check_budget};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A validated, immutable grant.
///
/// Build one with [`Capabilities::builder`] or load one with
/// [`Capabilities::from_file`]. There are no setters. A clone shares the
/// grant (a reference count, no copy): clone one per run.
#[derive(Clone, PartialEq)]
pub struct Capabilities {
    /// Shared by every clone: the copy a run takes (`RunOptions::new(caps.
    /// clone())`) and the gate keeps is this pointer, not the grant's
    /// mounts, rules and policy copied again for each run. A grant is never
    /// changed once built; a derived one is a new grant.
    grant: Arc<Grant>,
}

impl std::fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = &self.grant;
        f.debug_struct("Capabilities")
            .field("mounts", &g.mounts)
            .field("egress", &g.egress)
            .field("tools", &g.tools)
            .field("commands", &g.commands)
            .field("kv", &g.kv)
            .field("env", &g.env)
            .field("secrets", &g.secrets)
            .field("ask", &g.ask)
            .field("flow", &g.flow)
            .field("budget", &g.budget)
            .field("warnings", &g.warnings)
            .finish_non_exhaustive()
    }
}

/// What a [`Capabilities`] holds, validated.
#[derive(PartialEq)]
struct Grant {
    /// Shared with every run's open mounts, which read them here.
    mounts: Arc<[Mount]>,
    egress: Egress,
    tools: BTreeSet<String>,
    commands: BTreeMap<String, CommandTool>,
    kv: Option<KvGrant>,
    env: BTreeMap<String, String>,
    secrets: Vec<Secret>,
    ask: AskGrant,
    flow: FlowPolicy,
    budget: Budget,
    warnings: Vec<String>,
    /// The mounts' folders once a run opened them, shared by clones and
    /// derived grants (`capability/fs/folders.rs`).
    folders: Arc<Folders>,
}

/// Builds a [`Capabilities`]. Starts from nothing granted:
///
/// | what | default |
/// |---|---|
/// | read mounts, write mounts | none |
/// | egress rules | none (every fetch is `egress_denied`) |
/// | redirects followed per fetch | 0 (a 3xx response is returned as it is) |
/// | allow-all egress | off; only through [`CapabilitiesBuilder::dangerous`] |
/// | tools | none (every call is `tool_denied`) |
/// | key-value store | none (every kv op is `kv_denied`); [`kv`](CapabilitiesBuilder::kv) grants one |
/// | env | none |
/// | what a run may ask for (`[ask]`) | nothing; at most 3 questions per run once something may be ([`ask::DEFAULT_MAX_QUESTIONS`](crate::ask::DEFAULT_MAX_QUESTIONS)) |
/// | `max_ops` | 10,000 ([`budget::DEFAULT_MAX_OPS`](crate::budget::DEFAULT_MAX_OPS)) |
/// | `max_output_bytes` | 16 MiB ([`budget::DEFAULT_MAX_OUTPUT_BYTES`](crate::budget::DEFAULT_MAX_OUTPUT_BYTES)) |
/// | `max_wall` | 30 s ([`budget::DEFAULT_MAX_WALL`](crate::budget::DEFAULT_MAX_WALL)) |
/// | `max_fuel` | 10,000,000,000 ([`budget::DEFAULT_MAX_FUEL`](crate::budget::DEFAULT_MAX_FUEL)) |
/// | `max_memory_bytes` | 256 MiB ([`budget::DEFAULT_MAX_MEMORY_BYTES`](crate::budget::DEFAULT_MAX_MEMORY_BYTES)) |
/// | `max_write_bytes` | 1 GiB ([`budget::DEFAULT_MAX_WRITE_BYTES`](crate::budget::DEFAULT_MAX_WRITE_BYTES)) |
/// | `max_files` | 10,000 ([`budget::DEFAULT_MAX_FILES`](crate::budget::DEFAULT_MAX_FILES)) |
/// | `max_sent_bytes` | 64 MiB ([`budget::DEFAULT_MAX_SENT_BYTES`](crate::budget::DEFAULT_MAX_SENT_BYTES)) |
///
/// Relative host folders resolve against [`CapabilitiesBuilder::base_dir`]
/// (default: the current folder). Nothing is checked until
/// [`CapabilitiesBuilder::build`].
///
/// # Examples
///
/// ```
/// use sbx_wasm::Capabilities;
///
/// let data = tempfile::tempdir()?;
/// let out = tempfile::tempdir()?;
/// let caps = Capabilities::builder()
///     .read_mount(data.path(), "/work")
///     .write_mount(out.path(), "/work/out")
///     .allow_egress("https://api.example.com")
///     .allow_tool("summarize")
///     .max_ops(7)
///     .build()?;
/// assert_eq!(caps.budget().max_ops, 7);
/// assert_eq!(caps.mounts().len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct CapabilitiesBuilder {
    base_dir: Option<PathBuf>,
    mounts: RequestedMounts,
    egress: RequestedEgress,
    tools: RequestedTools,
    kv: Option<KvGrant>,
    env: Vec<(String, String)>,
    secrets: RequestedSecrets,
    ask: RequestedAsk,
    flow: RequestedFlow,
    budget: Budget,
    /// The new grant's folders, sharing those of the grant this builder
    /// derives from ([`Capabilities::to_builder`]).
    folders_of: Option<Arc<Folders>>,
}

/// The door to options that weaken the sandbox. Every use is reported in
/// [`Capabilities::warnings`]. Each capability adds its own dangerous
/// options here (e.g. [`DangerousCapabilities::allow_all_egress`]).
#[derive(Debug)]
pub struct DangerousCapabilities {
    inner: CapabilitiesBuilder,
}

impl DangerousCapabilities {
    /// Allow a fetch of any http or https URL. This turns off the
    /// anti-exfiltration control: a prompt-injected agent can send anything
    /// it can read to any host.
    pub fn allow_all_egress(mut self) -> CapabilitiesBuilder {
        self.inner.egress.allow_all();
        self.inner
    }
}

/// The caps file's TOML schema. Every table denies unknown keys, so a typo
/// is an error, never a silently ignored grant.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct CapsFile {
    #[serde(default)]
    fs: FsSection,
    #[serde(default)]
    net: NetSection,
    #[serde(default)]
    tools: ToolsSection,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kv: Option<KvSection>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    secrets: SecretsSection,
    #[serde(default, skip_serializing_if = "AskSection::is_empty")]
    ask: AskSection,
    #[serde(default, skip_serializing_if = "FlowSection::is_empty")]
    flow: FlowSection,
    #[serde(default)]
    budget: BudgetSection,
}

impl Capabilities {
    /// Start a grant that allows nothing, with the default budget.
    pub fn builder() -> CapabilitiesBuilder {
        CapabilitiesBuilder::default()
    }

    /// Load and validate a caps file. Relative host paths resolve against
    /// the file's folder.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, CapsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CapsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        Self::from_toml(&text, base, Some(path))
    }

    /// Parse caps TOML. Relative host paths resolve against `base`; `origin`
    /// names the file in error messages.
    pub fn from_toml(text: &str, base: &Path, origin: Option<&Path>) -> Result<Self, CapsError> {
        let shown = origin.unwrap_or(Path::new("<caps>"));
        let file: CapsFile = toml::from_str(text).map_err(|e| CapsError::Syntax {
            path: shown.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let result = Self::from_parsed(file, base);
        match origin {
            Some(p) => result.map_err(|e| e.in_file(p)),
            None => result,
        }
    }

    fn from_parsed(file: CapsFile, base: &Path) -> Result<Self, CapsError> {
        Self::builder_from(file, base)?.build()
    }

    fn builder_from(file: CapsFile, base: &Path) -> Result<CapabilitiesBuilder, CapsError> {
        let mut b = Capabilities::builder();
        b.base_dir = Some(base.to_path_buf());
        file.fs.apply(&mut b.mounts, &mut b.flow);
        file.flow.apply(&mut b.flow);
        file.net.apply(&mut b.egress)?;
        file.tools.apply(&mut b.tools, base)?;
        if let Some(kv) = file.kv {
            b.kv = Some(kv.grant()?);
        }
        for (k, v) in file.env {
            b = b.env(k, v);
        }
        b.secrets.apply(file.secrets);
        file.ask.apply(&mut b.ask)?;
        file.budget.apply(b)
    }

    /// A builder that holds this grant, to derive another from it: a host
    /// that adds a mount of its own (the MCP door's session scratch
    /// folder) or narrows a budget. This grant never changes; the new one
    /// is validated again when built.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::Capabilities;
    ///
    /// let scratch = tempfile::tempdir()?;
    /// let base = Capabilities::builder().max_ops(5).build()?;
    /// let wider = base.to_builder()?.write_mount(scratch.path(), "/scratch").build()?;
    /// assert_eq!(wider.mounts().len(), 1);
    /// assert_eq!(wider.budget().max_ops, 5);
    /// assert!(base.mounts().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_builder(&self) -> Result<CapabilitiesBuilder, CapsError> {
        // Secrets keep their values (a caps file holds only where they
        // come from, and not those given in Rust).
        let mut file = self.to_file();
        file.secrets.clear();
        let mut b = Self::builder_from(file, Path::new("/"))?;
        b.secrets.keep(&self.grant.secrets);
        b.mounts.keep_runner(&self.grant.mounts);
        b.folders_of = Some(self.derived_folders());
        Ok(b)
    }

    /// The folders of a grant derived from this one: it borrows the
    /// folders this one names (its mounts but the private ones) and keeps
    /// what it adds to itself.
    fn derived_folders(&self) -> Arc<Folders> {
        let named = self.grant.mounts.iter().filter(|m| !m.private);
        self.grant.folders.derive(named.map(|m| m.host.clone()))
    }

    /// The mounts' folders, opened once for every run of this grant.
    pub(crate) fn folders(&self) -> &Arc<Folders> {
        &self.grant.folders
    }

    /// Mounts, in caps-file order (read mounts first).
    pub fn mounts(&self) -> &[Mount] {
        &self.grant.mounts
    }

    /// The mounts, shared (a run's open mounts hold them, not copies).
    pub(crate) fn mounts_shared(&self) -> &Arc<[Mount]> {
        &self.grant.mounts
    }

    /// The egress grant.
    pub fn egress(&self) -> &Egress {
        &self.grant.egress
    }

    /// Tool names the agent may call.
    pub fn tools(&self) -> &BTreeSet<String> {
        &self.grant.tools
    }

    /// How the CLI runs tools defined in the caps file.
    pub fn tool_commands(&self) -> &BTreeMap<String, CommandTool> {
        &self.grant.commands
    }

    /// The key-value store the grant holds, if any.
    pub fn kv(&self) -> Option<&KvGrant> {
        self.grant.kv.as_ref()
    }

    /// Environment variables the guest sees.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.grant.env
    }

    /// Secrets: bound to hosts and headers, never shown to the guest (it
    /// sees a placeholder per run).
    pub fn secrets(&self) -> &[Secret] {
        &self.grant.secrets
    }

    /// What a run may ask for while it runs (`[ask]`).
    pub fn ask(&self) -> &AskGrant {
        &self.grant.ask
    }

    /// The budget.
    pub fn budget(&self) -> &Budget {
        &self.grant.budget
    }

    /// Things that are valid but probably not meant (e.g. allow-all egress).
    pub fn warnings(&self) -> &[String] {
        &self.grant.warnings
    }

    /// The effective grant as a caps file: absolute host paths, every budget
    /// explicit. Loading it gives back an equal grant, except for what a
    /// caps file cannot hold: a secret whose value was given in Rust
    /// ([`CapabilitiesBuilder::secret`]) is written as where it would come
    /// from (never its value), and a tool registered in Rust is only its
    /// allow-list entry. [`Capabilities::to_builder`] keeps both.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.to_file()).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }

    fn to_file(&self) -> CapsFile {
        CapsFile {
            fs: FsSection::render(&self.grant.mounts),
            net: NetSection::render(&self.grant.egress),
            tools: ToolsSection::render(&self.grant.tools, &self.grant.commands),
            kv: self.grant.kv.as_ref().map(KvSection::render),
            env: self.grant.env.clone(),
            secrets: crate::capability::net::secrets::config::render(&self.grant.secrets),
            ask: AskSection::render(&self.grant.ask),
            flow: FlowSection::render(&self.grant.flow),
            budget: BudgetSection::render(&self.grant.budget),
        }
    }
}

#[cfg(test)]
mod tests;
