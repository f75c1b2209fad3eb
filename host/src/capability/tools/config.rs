//! The tool capability's part of a grant: the `[tools]` section of a caps
//! file, the tool grant as requested, and the validation of names and
//! commands.
//!
//! ```toml
//! [tools]
//! allow = ["summarize"]
//! command.summarize = { argv = ["python3", "tools/summarize.py"], timeout_ms = 5000 }
//! # what a model is told (the MCP door lists it); both optional
//! command.summarize.description = "Summarise a text."
//! command.summarize.input_schema = { type = "object", properties = { text = { type = "string" } } }
//! ```

use super::{CommandTool, valid_tool_name};
use crate::error::{CapsError, non_negative};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// A TOML table, or JSON text, holding a JSON object schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_schema: Option<toml::Value>,
}

/// The tool grant as the builder was given it, before validation.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestedTools {
    allow: Vec<String>,
    commands: Vec<RawCommand>,
}

/// A tool command as given: its name, and the command (argv, cwd,
/// timeout, description, schema as JSON text; `cwd` may be relative).
type RawCommand = (String, CommandTool);

/// The validated tool grant: names allowed, and commands for the CLI.
pub(crate) type ToolGrant = (BTreeSet<String>, BTreeMap<String, CommandTool>);

const TOOL_FORM: &str = "1 to 64 characters from a-z 0-9 _ - .";
const SCHEMA_FORM: &str =
    "a JSON object schema, as a TOML table or JSON text, e.g. { type = \"object\" }";

/// A tool's input schema must be a JSON object whose `type`, if given, is
/// `"object"` (tool input is a JSON object).
fn check_schema(key: &str, text: &str) -> Result<(), CapsError> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| CapsError::invalid(key, format!("not JSON: {e}"), SCHEMA_FORM))?;
    let ok = v
        .as_object()
        .is_some_and(|o| o.get("type").is_none_or(|t| t == "object"));
    if !ok {
        return Err(CapsError::invalid(
            key,
            "is not an object schema",
            SCHEMA_FORM,
        ));
    }
    // Loaded now as every call will load it: a schema that cannot check
    // anything (a bad pattern, a `$ref` to the network or a file) is the
    // caps file's error, not each call's.
    jsonschema::validator_for(&v).map_err(|e| {
        CapsError::invalid(
            key,
            format!(
                "does not load as a JSON schema: {}",
                crate::bound::clip(e.to_string())
            ),
            SCHEMA_FORM,
        )
    })?;
    Ok(())
}

impl ToolsSection {
    /// Request this section's grant; relative `cwd`s resolve against
    /// `base`.
    pub(crate) fn apply(self, to: &mut RequestedTools, base: &Path) -> Result<(), CapsError> {
        to.allow.extend(self.allow);
        for (name, cmd) in self.command {
            let timeout =
                non_negative(&format!("tools.command.{name}.timeout_ms"), cmd.timeout_ms)?
                    .map(Duration::from_millis);
            let input_schema = match cmd.input_schema {
                None => None,
                Some(toml::Value::String(text)) => Some(text),
                Some(table) => Some(serde_json::to_string(&table).map_err(|e| {
                    CapsError::invalid(
                        format!("tools.command.{name}.input_schema"),
                        e.to_string(),
                        SCHEMA_FORM,
                    )
                })?),
            };
            let tool = CommandTool {
                argv: cmd.argv,
                cwd: cmd.cwd.map(|c| base.join(c)).unwrap_or_default(),
                timeout,
                description: cmd.description,
                input_schema,
            };
            to.commands.push((name, tool));
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
                    description: c.description.clone(),
                    input_schema: c.input_schema.clone().map(toml::Value::String),
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
        let tool = CommandTool {
            argv,
            ..CommandTool::default()
        };
        self.commands.push((name, tool));
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
            check_name(format!("tools.allow[{i}]"), t)?;
            tools.insert(t.clone());
        }
        let mut commands = BTreeMap::new();
        for (name, given) in &self.commands {
            let argv = &given.argv;
            let key = format!("tools.command.{name}");
            check_name(key.clone(), name)?;
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
            if let Some(text) = &given.input_schema {
                check_schema(&format!("{key}.input_schema"), text)?;
            }
            let cwd = if given.cwd.as_os_str().is_empty() {
                base
            } else {
                &given.cwd
            };
            let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
            commands.insert(
                name.clone(),
                CommandTool {
                    cwd,
                    ..given.clone()
                },
            );
        }
        Ok((tools, commands))
    }
}

/// Whether `name`, at the caps file's key `key`, is a valid tool name, or
/// the error naming the key and the form.
pub(crate) fn check_name(key: String, name: &str) -> Result<(), CapsError> {
    match valid_tool_name(name) {
        true => Ok(()),
        false => Err(CapsError::invalid(
            key,
            format!("{name:?} is not a valid tool name"),
            TOOL_FORM,
        )),
    }
}
