//! Tools a model can be told about: a description and a JSON schema of the
//! input for each (typed tools derive theirs: `typed.rs`), and the
//! registry's granted tools exported in the shapes model APIs take (OpenAI
//! function tools, Anthropic tools, MCP tools).

use super::{ToolError, ToolRegistry};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What a model is told about one tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON schema of its input (an object schema).
    pub input_schema: Value,
}

/// The shape of a tool list, as each kind of model API takes it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolFormat {
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`
    /// (OpenAI chat completions and compatible APIs).
    OpenAi,
    /// `{"name", "description", "input_schema"}` (Anthropic messages).
    Anthropic,
    /// `{"name", "description", "inputSchema"}` (Model Context Protocol
    /// `tools/list`).
    Mcp,
}

impl ToolDefinition {
    /// This definition in `format`.
    pub fn to_format(&self, format: ToolFormat) -> Value {
        match format {
            ToolFormat::OpenAi => json!({
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.input_schema,
                }
            }),
            ToolFormat::Anthropic => json!({
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
            }),
            ToolFormat::Mcp => json!({
                "name": self.name,
                "description": self.description,
                "inputSchema": self.input_schema,
            }),
        }
    }
}

/// The schema of a tool registered without one: any JSON object.
fn any_object() -> Value {
    json!({ "type": "object" })
}

impl ToolRegistry {
    /// Register an untyped function of the input text ([`ToolRegistry::register`]
    /// for a closure, with no annotation of the error type needed;
    /// [`ToolRegistry::add_tool`] is the typed way).
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::tools::ToolRegistry;
    ///
    /// let mut tools = ToolRegistry::new();
    /// tools.register_fn("upper", |input| Ok(input.to_uppercase()));
    /// ```
    pub fn register_fn<F>(&mut self, name: impl Into<String>, f: F) -> &mut Self
    where
        F: Fn(&str) -> Result<String, ToolError> + Send + Sync + 'static,
    {
        self.register(name, f)
    }

    /// Register `tool` with what a model is told about it: `description`
    /// and the JSON schema of its input (written by hand; a typed tool's is
    /// derived: [`ToolRegistry::add_tool`]).
    pub fn register_described(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        tool: impl super::Tool + 'static,
    ) -> &mut Self {
        let name = name.into();
        self.register(name.clone(), tool);
        self.describe(&name, description, input_schema);
        self
    }

    /// Give the tool registered as `name` what a model is told about it
    /// (for a tool registered without it, e.g. with
    /// [`ToolRegistry::register_async`]); `false` when no tool has that
    /// name.
    pub fn describe(
        &mut self,
        name: &str,
        description: impl Into<String>,
        input_schema: Value,
    ) -> bool {
        if !self.tools.contains_key(name) {
            return false;
        }
        let definition = ToolDefinition {
            name: name.to_string(),
            description: description.into(),
            input_schema,
        };
        Arc::make_mut(&mut self.definitions).insert(name.to_string(), definition);
        true
    }

    /// What a model may be told about the tools a grant allows
    /// (`allowed`: [`Capabilities::tools`](crate::Capabilities::tools))
    /// that are registered here, sorted by name. A tool registered without
    /// a description gets an empty one and an any-object schema.
    pub fn definitions(&self, allowed: &BTreeSet<String>) -> Vec<ToolDefinition> {
        allowed
            .iter()
            .filter(|name| self.tools.contains_key(*name))
            .map(|name| {
                self.definitions
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| ToolDefinition {
                        name: name.clone(),
                        description: String::new(),
                        input_schema: any_object(),
                    })
            })
            .collect()
    }

    /// [`ToolRegistry::definitions`] as a JSON list in `format`.
    pub fn export(&self, allowed: &BTreeSet<String>, format: ToolFormat) -> Value {
        Value::Array(
            self.definitions(allowed)
                .iter()
                .map(|d| d.to_format(format))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Services;
    use crate::{Capabilities, Op, Sandbox};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Search {
        /// What to look for.
        query: String,
        /// At most this many results.
        limit: Option<u32>,
    }

    fn registry() -> ToolRegistry {
        let mut tools = ToolRegistry::new();
        tools.register_typed("search", "Search the notes.", |s: Search| {
            Ok(format!("{} x{}", s.query, s.limit.unwrap_or(1)))
        });
        tools.register_fn("upper", |s| Ok(s.to_uppercase()));
        tools.register_typed("shell", "Run a command.", |s: Search| Ok(s.query));
        tools
    }

    #[test]
    fn granted_tools_are_exported_in_each_shape_and_ungranted_ones_never() {
        let caps = Capabilities::builder()
            .allow_tool("search")
            .allow_tool("upper")
            .allow_tool("missing")
            .build()
            .unwrap();
        let tools = registry();
        let names: Vec<String> = tools
            .definitions(caps.tools())
            .into_iter()
            .map(|d| d.name)
            .collect();
        // Allowed and registered only: not `shell` (not granted), not
        // `missing` (nothing registered).
        assert_eq!(names, ["search", "upper"]);

        let openai = tools.export(caps.tools(), ToolFormat::OpenAi);
        let f = &openai[0]["function"];
        assert_eq!(openai[0]["type"], "function");
        assert_eq!(f["name"], "search");
        assert_eq!(f["description"], "Search the notes.");
        assert_eq!(f["parameters"]["type"], "object");
        assert_eq!(f["parameters"]["required"], json!(["query"]));
        assert_eq!(
            f["parameters"]["properties"]["query"]["description"],
            "What to look for."
        );
        assert!(f["parameters"].get("$schema").is_none());

        let anthropic = tools.export(caps.tools(), ToolFormat::Anthropic);
        assert_eq!(anthropic[0]["name"], "search");
        assert_eq!(anthropic[0]["input_schema"], f["parameters"]);
        assert_eq!(anthropic[1]["input_schema"], json!({"type": "object"}));

        let mcp = tools.export(caps.tools(), ToolFormat::Mcp);
        assert_eq!(mcp[0]["inputSchema"], f["parameters"]);
        assert_eq!(mcp.as_array().unwrap().len(), 2);
    }

    #[test]
    fn typed_input_is_checked_before_the_tool_runs() {
        let caps = Capabilities::builder()
            .allow_tool("search")
            .build()
            .unwrap();
        let mut sandbox = Sandbox::builder(caps)
            .services(Services::new().tools(registry()))
            .build()
            .unwrap();
        let ok = sandbox.run(Op::tool("search", r#"{"query": "wasm", "limit": 3}"#));
        assert!(ok.ok, "{ok:?}");
        let bad = sandbox.run(Op::tool("search", r#"{"limit": "many"}"#));
        let e = bad.error.unwrap();
        assert!(
            e.message.contains("does not match the tool's schema"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_panicking_tool_fails_with_its_message() {
        let caps = Capabilities::builder().allow_tool("boom").build().unwrap();
        let mut tools = ToolRegistry::new();
        tools.register_fn("boom", |_| panic!("the tool broke on purpose"));
        let mut sandbox = Sandbox::builder(caps)
            .services(Services::new().tools(tools))
            .build()
            .unwrap();
        let r = sandbox.run(Op::tool("boom", ""));
        let e = r.error.unwrap();
        assert!(
            e.message.contains("the tool broke on purpose"),
            "{}",
            e.message
        );
        assert!(!r.ok && r.denial.is_none());
    }
}
