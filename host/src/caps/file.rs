//! The caps file's TOML schema. Every table denies unknown keys, so a typo is
//! an error, never a silently ignored grant.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct CapsFile {
    #[serde(default)]
    pub fs: FsSection,
    #[serde(default)]
    pub net: NetSection,
    #[serde(default)]
    pub tools: ToolsSection,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub budget: BudgetSection,
}

#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct FsSection {
    #[serde(default)]
    pub read: Vec<MountEntry>,
    #[serde(default)]
    pub write: Vec<MountEntry>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct MountEntry {
    pub host: String,
    pub guest: String,
}

#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetSection {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_redirects: Option<i64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dangerous_allow_all: bool,
}

#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolsSection {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub command: BTreeMap<String, CommandEntry>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandEntry {
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i64>,
}

#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct BudgetSection {
    pub max_ops: Option<i64>,
    pub max_output_bytes: Option<i64>,
    pub max_wall_ms: Option<i64>,
    pub max_fuel: Option<i64>,
    pub max_memory_bytes: Option<i64>,
    pub max_write_bytes: Option<i64>,
    pub max_files: Option<i64>,
}
