//! `sbx-wasm mcp --catalog FILE`: what the door offers besides its own
//! tools, declared by the operator in TOML. Nothing in it widens the
//! grant: a catalog tool or resource template is a Python script run under
//! the grant like a `run_python` call, a catalog resource or a prompt's
//! image is a guest path read through the gate, and a client tool (the
//! client's model or its user, asked by sampling or elicitation) is a tool
//! the grant must allow by name before a guest can call it.
//!
//! - `file.rs`: the TOML form and its checks (names, scripts, placeholders).
//! - `template.rs`: URI templates (`test://item/{id}`) and their matching.
//! - `content.rs`: a script's stdout as MCP content blocks, checked.
//! - `ask.rs`: client tools (sampling, elicitation) for a run's registry.
//! - `prompts.rs`: a catalog prompt's messages, arguments put in.

mod ask;
mod content;
mod file;
mod prompts;
mod template;

pub(crate) use ask::definition as client_tool_definition;
pub(crate) use ask::{AskKind, Asked, ClientTool, client_offers, client_tools};
pub(crate) use content::blocks;
pub(crate) use file::load_for_grant;
pub(crate) use prompts::{Embed, MessageBody, PromptDef};
pub(crate) use template::UriTemplate;

use serde_json::Value;
use std::sync::Arc;

/// How a catalog tool's successful run answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OutputKind {
    /// stdout as one text block.
    #[default]
    Text,
    /// stdout as a JSON list of MCP content blocks (text, image, audio,
    /// resource, resource_link), checked before the client sees them.
    Content,
}

/// A tool whose body is a Python script run under the grant: the call's
/// arguments (checked against `input_schema`) are its stdin as JSON.
pub(crate) struct ScriptTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) validator: Arc<jsonschema::Validator>,
    pub(crate) source: String,
    pub(crate) output: OutputKind,
}

impl ScriptTool {
    /// Why `args` are not ones this tool takes: where and which rule,
    /// never the value (it may be large).
    pub(crate) fn check(&self, args: &Value) -> Result<(), String> {
        match self.validator.iter_errors(args).next() {
            None => Ok(()),
            Some(e) => Err(format!(
                "the arguments do not match the tool's input_schema: at {:?}, the rule {:?} fails",
                sbx_wasm::bound::clip(e.instance_path().to_string()),
                sbx_wasm::bound::clip(e.schema_path().to_string()),
            )),
        }
    }
}

/// A resource that is one guest file, under a URI of the operator's
/// choosing (read with one `fs_read` through the gate).
pub(crate) struct FileResource {
    pub(crate) uri: String,
    pub(crate) path: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
}

/// A resource template whose reads run a Python script under the grant:
/// the URI's variables are its stdin as a JSON object, its stdout the
/// resource's text.
pub(crate) struct ScriptTemplate {
    pub(crate) template: UriTemplate,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: String,
    pub(crate) source: String,
}

/// Everything a catalog file declares, checked.
#[derive(Default)]
pub(crate) struct Catalog {
    pub(crate) tools: Vec<ScriptTool>,
    pub(crate) client_tools: Vec<ClientTool>,
    pub(crate) prompts: Vec<PromptDef>,
    pub(crate) resources: Vec<FileResource>,
    pub(crate) templates: Vec<ScriptTemplate>,
}

impl Catalog {
    pub(crate) fn tool(&self, name: &str) -> Option<&ScriptTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompts.iter().find(|p| p.name == name)
    }

    /// The file resource named `uri`, if one is.
    pub(crate) fn resource(&self, uri: &str) -> Option<&FileResource> {
        self.resources.iter().find(|r| r.uri == uri)
    }

    /// The template `uri` matches, with its variables' values.
    pub(crate) fn template(&self, uri: &str) -> Option<(&ScriptTemplate, Value)> {
        (self.templates.iter()).find_map(|t| t.template.matches(uri).map(|vars| (t, vars)))
    }
}
