//! `Capabilities`: everything a run may touch, and nothing else. Loaded from a
//! caps file or built in Rust, validated once, immutable afterwards (authority
//! only ever shrinks: a run cannot widen its own grant).

mod builder;
mod file;

pub use builder::{CapabilitiesBuilder, DangerousCapabilities};

use crate::budget::Budget;
use crate::error::CapsError;
use crate::fs::{Access, Mount};
use crate::net::Egress;
use crate::tools::CommandTool;
use file::{BudgetSection, CapsFile, CommandEntry, MountEntry};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// A validated, immutable grant.
///
/// Build one with [`Capabilities::builder`] or load one with
/// [`Capabilities::from_file`]. There are no setters.
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    mounts: Vec<Mount>,
    egress: Egress,
    tools: BTreeSet<String>,
    commands: BTreeMap<String, CommandTool>,
    env: BTreeMap<String, String>,
    budget: Budget,
    warnings: Vec<String>,
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
        let mut b = Capabilities::builder();
        b.base_dir = Some(base.to_path_buf());
        for m in file.fs.read {
            b = b.read_mount(m.host, m.guest);
        }
        for m in file.fs.write {
            b = b.write_mount(m.host, m.guest);
        }
        for rule in file.net.allow {
            b = b.allow_egress(rule);
        }
        if let Some(n) = non_negative("net.max_redirects", file.net.max_redirects)? {
            b = b.max_redirects(u32::try_from(n).unwrap_or(u32::MAX));
        }
        if file.net.dangerous_allow_all {
            b = b.dangerous().allow_all_egress();
        }
        for t in file.tools.allow {
            b = b.allow_tool(t);
        }
        for (name, cmd) in file.tools.command {
            let timeout =
                non_negative(&format!("tools.command.{name}.timeout_ms"), cmd.timeout_ms)?
                    .map(Duration::from_millis);
            let cwd = cmd.cwd.map(|c| base.join(c));
            b.commands.push((name, cmd.argv, cwd, timeout));
        }
        for (k, v) in file.env {
            b = b.env(k, v);
        }
        let s = file.budget;
        if let Some(n) = non_negative("budget.max_ops", s.max_ops)? {
            b = b.max_ops(n);
        }
        if let Some(n) = non_negative("budget.max_output_bytes", s.max_output_bytes)? {
            b = b.max_output_bytes(n);
        }
        if let Some(n) = non_negative("budget.max_wall_ms", s.max_wall_ms)? {
            b = b.max_wall(Duration::from_millis(n));
        }
        if let Some(n) = non_negative("budget.max_fuel", s.max_fuel)? {
            b = b.max_fuel(n);
        }
        if let Some(n) = non_negative("budget.max_memory_bytes", s.max_memory_bytes)? {
            b = b.max_memory_bytes(n);
        }
        if let Some(n) = non_negative("budget.max_write_bytes", s.max_write_bytes)? {
            b = b.max_write_bytes(n);
        }
        if let Some(n) = non_negative("budget.max_files", s.max_files)? {
            b = b.max_files(n);
        }
        b.build()
    }

    /// Mounts, in caps-file order (read mounts first).
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    /// The egress grant.
    pub fn egress(&self) -> &Egress {
        &self.egress
    }

    /// Tool names the agent may call.
    pub fn tools(&self) -> &BTreeSet<String> {
        &self.tools
    }

    /// How the CLI runs tools defined in the caps file.
    pub fn tool_commands(&self) -> &BTreeMap<String, CommandTool> {
        &self.commands
    }

    /// Environment variables the guest sees.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Things that are valid but probably not meant (e.g. allow-all egress).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The effective grant as a caps file: absolute host paths, every budget
    /// explicit. Loading it gives back an equal grant.
    pub fn to_toml(&self) -> String {
        let entry = |m: &Mount| MountEntry {
            host: m.host.display().to_string(),
            guest: m.guest.as_str().to_string(),
        };
        let mut file = CapsFile::default();
        for m in &self.mounts {
            match m.access {
                Access::ReadOnly => file.fs.read.push(entry(m)),
                Access::ReadWrite => file.fs.write.push(entry(m)),
            }
        }
        file.net.allow = self
            .egress
            .rules()
            .iter()
            .map(|r| r.as_str().to_string())
            .collect();
        file.net.max_redirects = Some(i64::from(self.egress.max_redirects()));
        file.net.dangerous_allow_all = self.egress.allows_all();
        file.tools.allow = self.tools.iter().cloned().collect();
        for (name, c) in &self.commands {
            file.tools.command.insert(
                name.clone(),
                CommandEntry {
                    argv: c.argv.clone(),
                    cwd: Some(c.cwd.display().to_string()),
                    timeout_ms: c.timeout.map(|t| t.as_millis() as i64),
                },
            );
        }
        file.env = self.env.clone();
        let b = &self.budget;
        file.budget = BudgetSection {
            max_ops: Some(b.max_ops as i64),
            max_output_bytes: Some(b.max_output_bytes as i64),
            max_wall_ms: Some(b.max_wall.as_millis() as i64),
            max_fuel: Some(b.max_fuel as i64),
            max_memory_bytes: Some(b.max_memory_bytes as i64),
            max_write_bytes: Some(b.max_write_bytes as i64),
            max_files: Some(b.max_files as i64),
        };
        toml::to_string(&file).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }
}

fn non_negative(key: &str, v: Option<i64>) -> Result<Option<u64>, CapsError> {
    match v {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as u64)),
        Some(n) => Err(CapsError::invalid(
            key,
            format!("{n} is negative"),
            "a non-negative integer",
        )),
    }
}

#[cfg(test)]
mod tests;
