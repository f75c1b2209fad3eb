//! Building a grant in Rust, and the validation every grant passes
//! (whether it came from a caps file or from this builder).

use super::Capabilities;
use crate::budget::{self, Budget};
use crate::error::CapsError;
use crate::fs::{Access, GuestPath, Mount, check_path};
use crate::net::{Egress, EgressRule, LIMIT_MAX_REDIRECTS, RULE_FORM};
use crate::tools::{CommandTool, valid_tool_name};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Builds a [`Capabilities`]. Starts from nothing granted:
///
/// | what | default |
/// |---|---|
/// | read mounts, write mounts | none |
/// | egress rules | none (every fetch is `egress_denied`) |
/// | redirects followed per fetch | 0 (a 3xx response is returned as it is) |
/// | allow-all egress | off; only through [`CapabilitiesBuilder::dangerous`] |
/// | tools | none (every call is `tool_denied`) |
/// | env | none |
/// | `max_ops` | 10,000 ([`budget::DEFAULT_MAX_OPS`]) |
/// | `max_output_bytes` | 16 MiB ([`budget::DEFAULT_MAX_OUTPUT_BYTES`]) |
/// | `max_wall` | 30 s ([`budget::DEFAULT_MAX_WALL`]) |
/// | `max_fuel` | 10,000,000,000 ([`budget::DEFAULT_MAX_FUEL`]) |
/// | `max_memory_bytes` | 256 MiB ([`budget::DEFAULT_MAX_MEMORY_BYTES`]) |
/// | `max_write_bytes` | 1 GiB ([`budget::DEFAULT_MAX_WRITE_BYTES`]) |
/// | `max_files` | 10,000 ([`budget::DEFAULT_MAX_FILES`]) |
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
    pub(super) base_dir: Option<PathBuf>,
    mounts: Vec<(PathBuf, String, Access)>,
    rules: Vec<String>,
    max_redirects: u32,
    allow_all: bool,
    tools: Vec<String>,
    pub(super) commands: Vec<RawCommand>,
    env: Vec<(String, String)>,
    budget: Budget,
}

/// A tool command as given, before validation: name, argv, cwd, timeout.
type RawCommand = (String, Vec<String>, Option<PathBuf>, Option<Duration>);

/// The door to options that weaken the sandbox. Every use is reported in
/// [`Capabilities::warnings`].
#[derive(Debug)]
pub struct DangerousCapabilities {
    inner: CapabilitiesBuilder,
}

impl DangerousCapabilities {
    /// Allow a fetch of any http or https URL. This turns off the
    /// anti-exfiltration control: a prompt-injected agent can send anything
    /// it can read to any host.
    pub fn allow_all_egress(mut self) -> CapabilitiesBuilder {
        self.inner.allow_all = true;
        self.inner
    }
}

impl CapabilitiesBuilder {
    /// Folder that relative host paths resolve against.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// Show host folder `host` read-only at guest path `guest`.
    pub fn read_mount(mut self, host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        self.mounts
            .push((host.into(), guest.into(), Access::ReadOnly));
        self
    }

    /// Show host folder `host` read-write at guest path `guest`.
    pub fn write_mount(mut self, host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        self.mounts
            .push((host.into(), guest.into(), Access::ReadWrite));
        self
    }

    /// Allow fetches matching `rule` (see [`RULE_FORM`]).
    pub fn allow_egress(mut self, rule: impl Into<String>) -> Self {
        self.rules.push(rule.into());
        self
    }

    /// Follow up to `n` redirects per fetch (default 0, at most
    /// [`LIMIT_MAX_REDIRECTS`]); every hop passes the whole egress decision.
    pub fn max_redirects(mut self, n: u32) -> Self {
        self.max_redirects = n;
        self
    }

    /// Allow calls to the tool `name` (it must also be registered to run).
    pub fn allow_tool(mut self, name: impl Into<String>) -> Self {
        self.tools.push(name.into());
        self
    }

    /// Run tool `name` as the program `argv` (for the CLI's registry), in
    /// the base folder.
    pub fn tool_command(mut self, name: impl Into<String>, argv: Vec<String>) -> Self {
        self.commands.push((name.into(), argv, None, None));
        self
    }

    /// Grant the guest an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Set `max_ops`.
    pub fn max_ops(mut self, n: u64) -> Self {
        self.budget.max_ops = n;
        self
    }

    /// Set `max_output_bytes`.
    pub fn max_output_bytes(mut self, n: u64) -> Self {
        self.budget.max_output_bytes = n;
        self
    }

    /// Set `max_wall`.
    pub fn max_wall(mut self, d: Duration) -> Self {
        self.budget.max_wall = d;
        self
    }

    /// Set `max_fuel`.
    pub fn max_fuel(mut self, n: u64) -> Self {
        self.budget.max_fuel = n;
        self
    }

    /// Set `max_memory_bytes`.
    pub fn max_memory_bytes(mut self, n: u64) -> Self {
        self.budget.max_memory_bytes = n;
        self
    }

    /// Set `max_write_bytes` (bytes written into write mounts by one run).
    pub fn max_write_bytes(mut self, n: u64) -> Self {
        self.budget.max_write_bytes = n;
        self
    }

    /// Set `max_files` (files, folders and links created by one run).
    pub fn max_files(mut self, n: u64) -> Self {
        self.budget.max_files = n;
        self
    }

    /// Options that weaken the sandbox.
    pub fn dangerous(self) -> DangerousCapabilities {
        DangerousCapabilities { inner: self }
    }

    /// Validate everything and freeze the grant.
    pub fn build(self) -> Result<Capabilities, CapsError> {
        let base = self.base_dir.clone().unwrap_or_else(|| PathBuf::from("."));
        let mut warnings = Vec::new();
        let mounts = build_mounts(&self.mounts, &base)?;

        let mut rules = Vec::new();
        for (i, text) in self.rules.iter().enumerate() {
            let rule = EgressRule::parse(text).map_err(|e| {
                CapsError::invalid(
                    format!("net.allow[{i}]"),
                    format!("{text:?}: {e}"),
                    RULE_FORM,
                )
            })?;
            rules.push(rule);
        }
        if self.max_redirects > LIMIT_MAX_REDIRECTS {
            return Err(CapsError::invalid(
                "net.max_redirects",
                format!("{} is too many", self.max_redirects),
                format!("0 to {LIMIT_MAX_REDIRECTS}"),
            ));
        }
        if self.allow_all {
            warnings.push(
                "net.dangerous_allow_all is on: the guest may fetch any http(s) URL, \
                 so nothing stops it sending what it reads to any host"
                    .to_string(),
            );
        }

        let tool_form = "1 to 64 characters from a-z 0-9 _ - .";
        let mut tools = BTreeSet::new();
        for (i, t) in self.tools.iter().enumerate() {
            if !valid_tool_name(t) {
                return Err(CapsError::invalid(
                    format!("tools.allow[{i}]"),
                    format!("{t:?} is not a valid tool name"),
                    tool_form,
                ));
            }
            tools.insert(t.clone());
        }
        let mut commands = BTreeMap::new();
        for (name, argv, cwd, timeout) in &self.commands {
            let key = format!("tools.command.{name}");
            if !valid_tool_name(name) {
                return Err(CapsError::invalid(
                    key,
                    format!("{name:?} is not a valid tool name"),
                    tool_form,
                ));
            }
            if argv.is_empty() || argv[0].is_empty() {
                return Err(CapsError::invalid(
                    format!("{key}.argv"),
                    "is empty",
                    "[\"program\", \"arg\", ...]",
                ));
            }
            if !tools.contains(name) {
                warnings.push(format!(
                    "{key} is defined but `{name}` is not in tools.allow, so it can never be called"
                ));
            }
            commands.insert(
                name.clone(),
                CommandTool {
                    argv: argv.clone(),
                    cwd: absolute(cwd.as_deref().unwrap_or(&base)),
                    timeout: *timeout,
                },
            );
        }

        let mut env = BTreeMap::new();
        for (k, v) in &self.env {
            let key = format!("env.{k}");
            if k.is_empty() || k.contains(['=', '\0']) {
                return Err(CapsError::invalid(
                    key,
                    "is not a valid variable name",
                    "a non-empty name without `=` or NUL",
                ));
            }
            if v.contains('\0') {
                return Err(CapsError::invalid(
                    key,
                    "value contains NUL",
                    "a string without NUL",
                ));
            }
            env.insert(k.clone(), v.clone());
        }

        check_budget(&self.budget)?;
        Ok(Capabilities {
            mounts,
            egress: Egress {
                rules,
                dangerous_allow_all: self.allow_all,
                max_redirects: self.max_redirects,
            },
            tools,
            commands,
            env,
            budget: self.budget,
            warnings,
        })
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn build_mounts(raw: &[(PathBuf, String, Access)], base: &Path) -> Result<Vec<Mount>, CapsError> {
    let mut mounts: Vec<Mount> = Vec::new();
    let (mut ri, mut wi) = (0, 0);
    for (host, guest, access) in raw {
        let key = match access {
            Access::ReadOnly => {
                ri += 1;
                format!("fs.read[{}]", ri - 1)
            }
            Access::ReadWrite => {
                wi += 1;
                format!("fs.write[{}]", wi - 1)
            }
        };
        let guest_form = "an absolute guest path without `..`, e.g. \"/work\" (or \"/\")";
        let g: GuestPath = check_path(guest).map_err(|d| {
            CapsError::invalid(
                format!("{key}.guest"),
                format!("{guest:?}: {}", d.message),
                guest_form,
            )
        })?;
        if let Some(other) = mounts.iter().find(|m| m.guest == g) {
            return Err(CapsError::invalid(
                format!("{key}.guest"),
                format!("{g} is already mounted (host {})", other.host.display()),
                "each guest path at most once",
            ));
        }
        let joined = if host.is_absolute() {
            host.clone()
        } else {
            base.join(host)
        };
        let host_form =
            "an existing host folder (relative paths resolve against the caps file's folder)";
        let canon = std::fs::canonicalize(&joined).map_err(|e| {
            CapsError::invalid(
                format!("{key}.host"),
                format!("{}: {e}", joined.display()),
                host_form,
            )
        })?;
        if !canon.is_dir() {
            return Err(CapsError::invalid(
                format!("{key}.host"),
                format!("{} is not a folder", canon.display()),
                host_form,
            ));
        }
        mounts.push(Mount {
            host: canon,
            guest: g,
            access: *access,
        });
    }
    // A read-only folder inside (or equal to) a writable one is writable
    // through the writable mount (a symlink is enough), so the read-only
    // grant would be a lie.
    for ro in mounts.iter().filter(|m| m.access == Access::ReadOnly) {
        if let Some(rw) = mounts
            .iter()
            .find(|m| m.access == Access::ReadWrite && ro.host.starts_with(&m.host))
        {
            return Err(CapsError::invalid(
                "fs.read",
                format!(
                    "read mount {} (host {}) lies inside write mount {} (host {}), so the guest could write it",
                    ro.guest,
                    ro.host.display(),
                    rw.guest,
                    rw.host.display()
                ),
                "read-only host folders outside every write mount's host folder",
            ));
        }
    }
    Ok(mounts)
}

fn check_budget(b: &Budget) -> Result<(), CapsError> {
    let checks: [(&str, u128, u128, &str); 7] = [
        (
            "max_ops",
            b.max_ops.into(),
            budget::LIMIT_MAX_OPS.into(),
            "",
        ),
        (
            "max_output_bytes",
            b.max_output_bytes.into(),
            budget::LIMIT_MAX_OUTPUT_BYTES.into(),
            " bytes",
        ),
        (
            "max_wall_ms",
            b.max_wall.as_millis(),
            budget::LIMIT_MAX_WALL.as_millis(),
            " ms (one day)",
        ),
        (
            "max_fuel",
            b.max_fuel.into(),
            budget::LIMIT_MAX_FUEL.into(),
            "",
        ),
        (
            "max_memory_bytes",
            b.max_memory_bytes.into(),
            budget::LIMIT_MAX_MEMORY_BYTES.into(),
            " bytes (a wasm32 memory cannot exceed 4 GiB)",
        ),
        (
            "max_write_bytes",
            b.max_write_bytes.into(),
            budget::LIMIT_MAX_WRITE_BYTES.into(),
            " bytes (1 TiB)",
        ),
        (
            "max_files",
            b.max_files.into(),
            budget::LIMIT_MAX_FILES.into(),
            "",
        ),
    ];
    for (key, value, max, unit) in checks {
        if value > max {
            return Err(CapsError::invalid(
                format!("budget.{key}"),
                format!("{value} is absurdly large"),
                format!("0 to {max}{unit}"),
            ));
        }
    }
    Ok(())
}
