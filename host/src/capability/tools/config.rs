//! The tool capability's part of a grant: the `[tools]` section of a caps
//! file, the tool grant as requested, and the validation of names and
//! commands.
//!
//! ```toml
//! [tools]
//! allow = ["summarize"]
//! command.summarize = { argv = ["python3", "tools/summarize.py"], timeout_ms = 5000 }
//! ```

use super::{CommandTool, valid_tool_name};
use crate::error::{CapsError, non_negative};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `[tools]`: the allow-list, and how the CLI runs each tool.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolsSection {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    command: BTreeMap<String, CommandEntry>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct CommandEntry {
    argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<i64>,
}

/// The tool grant as the builder was given it, before validation.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestedTools {
    allow: Vec<String>,
    commands: Vec<RawCommand>,
}

/// A tool command as given: name, argv, cwd, timeout.
type RawCommand = (String, Vec<String>, Option<PathBuf>, Option<Duration>);

/// The validated tool grant: names allowed, and commands for the CLI.
pub(crate) type ToolGrant = (BTreeSet<String>, BTreeMap<String, CommandTool>);

const TOOL_FORM: &str = "1 to 64 characters from a-z 0-9 _ - .";

impl ToolsSection {
    /// Request this section's grant; relative `cwd`s resolve against
    /// `base`.
    pub(crate) fn apply(self, to: &mut RequestedTools, base: &Path) -> Result<(), CapsError> {
        to.allow.extend(self.allow);
        for (name, cmd) in self.command {
            let timeout =
                non_negative(&format!("tools.command.{name}.timeout_ms"), cmd.timeout_ms)?
                    .map(Duration::from_millis);
            let cwd = cmd.cwd.map(|c| base.join(c));
            to.commands.push((name, cmd.argv, cwd, timeout));
        }
        Ok(())
    }

    /// The section that grants `allow` and `commands`.
    pub(crate) fn render(
        allow: &BTreeSet<String>,
        commands: &BTreeMap<String, CommandTool>,
    ) -> ToolsSection {
        let command = commands
            .iter()
            .map(|(name, c)| {
                let entry = CommandEntry {
                    argv: c.argv.clone(),
                    cwd: Some(c.cwd.display().to_string()),
                    timeout_ms: c.timeout.map(|t| t.as_millis() as i64),
                };
                (name.clone(), entry)
            })
            .collect();
        ToolsSection {
            allow: allow.iter().cloned().collect(),
            command,
        }
    }
}

impl RequestedTools {
    /// Allow calls to tool `name`.
    pub(crate) fn allow(&mut self, name: String) {
        self.allow.push(name);
    }

    /// Run tool `name` as the program `argv`, in the base folder.
    pub(crate) fn command(&mut self, name: String, argv: Vec<String>) {
        self.commands.push((name, argv, None, None));
    }

    /// Validate names and commands (a command's folder defaults to `base`);
    /// warnings for a command no one may call.
    pub(crate) fn build(
        &self,
        base: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<ToolGrant, CapsError> {
        let mut tools = BTreeSet::new();
        for (i, t) in self.allow.iter().enumerate() {
            if !valid_tool_name(t) {
                return Err(CapsError::invalid(
                    format!("tools.allow[{i}]"),
                    format!("{t:?} is not a valid tool name"),
                    TOOL_FORM,
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
                    TOOL_FORM,
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
            let cwd = cwd.as_deref().unwrap_or(base);
            let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
            commands.insert(
                name.clone(),
                CommandTool {
                    argv: argv.clone(),
                    cwd,
                    timeout: *timeout,
                },
            );
        }
        Ok((tools, commands))
    }
}
