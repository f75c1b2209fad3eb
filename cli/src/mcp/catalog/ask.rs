//! Client tools: tools a guest calls (`sbx.call_tool(name, input)`) whose
//! answer comes from the MCP client, over the session the call came in on.
//!
//! - `sampling`: the client's model. Input `{"prompt", "system"?,
//!   "max_tokens"?}` (or plain text, the prompt); output the model's text.
//!   `max_tokens` is clamped to the catalog's.
//! - `elicitation`: the client's user, with a form. Input `{"message",
//!   "schema"}` (the protocol's restricted object schema); output
//!   `{"action": "accept" | "decline" | "cancel", "content": ...}`. The
//!   user is told who asks: the message shown begins "Sandboxed code asks
//!   (tool NAME):", so a guest cannot pose as the server or the client,
//!   and it is at most [`MAX_MESSAGE`] bytes. Only form elicitation: a
//!   guest cannot send the user to a URL.
//!
//! The grant decides whether a guest may call one at all (`[tools] allow`,
//! as for any tool; the call is on record like any tool call); the catalog
//! says how often a session may ask (`max_calls`) and how long an answer
//! may be. A client that did not declare the capability, and the
//! sessionless revision (2026-07-28, where a server may not ask the
//! client), give the guest a tool failure, never a hang: the wait is the
//! run's wall time left.

#[allow(deprecated)] // sampling: deprecated from 2026-07-28, served before it
use rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitationSchema, SamplingMessage,
};
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::tools::{ToolError, ToolRegistry};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AskKind {
    Sampling,
    Elicitation,
}

/// A client tool as the catalog declares it.
#[derive(Clone, Debug)]
pub(crate) struct ClientTool {
    pub(crate) name: String,
    pub(crate) kind: AskKind,
    pub(crate) max_calls: u32,
    pub(crate) max_tokens: u32,
}

/// How many times each client tool was asked, in one session.
#[derive(Default)]
pub(crate) struct Asked(Mutex<BTreeMap<String, u32>>);

impl Asked {
    fn take(&self, tool: &ClientTool) -> Result<(), ToolError> {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(tool.name.clone()).or_default();
        if *n >= tool.max_calls {
            return Err(ToolError::Failed(format!(
                "{} was asked {} times in this session, the most the catalog allows",
                tool.name, tool.max_calls
            )));
        }
        *n += 1;
        Ok(())
    }
}

/// What a guest is told of `tool` (the `code_mode` prompt lists it with
/// the granted tools): what it asks, its input and its output.
pub(crate) fn definition(tool: &ClientTool) -> sbx_wasm::tools::ToolDefinition {
    let (description, input_schema) = match tool.kind {
        AskKind::Sampling => (
            format!(
                "Ask the client's model; returns its text (at most {} tokens, {} times a session).",
                tool.max_tokens, tool.max_calls
            ),
            json!({ "type": "object", "properties": {
                "prompt": { "type": "string" }, "system": { "type": "string" },
                "max_tokens": { "type": "integer" } }, "required": ["prompt"] }),
        ),
        AskKind::Elicitation => (
            format!(
                "Ask the client's user with a form (shown as asked by sandboxed code, {} times a \
                 session); returns JSON {{\"action\": \"accept\" | \"decline\" | \"cancel\", \
                 \"content\": the answers}}.",
                tool.max_calls
            ),
            json!({ "type": "object", "properties": {
                "message": { "type": "string" },
                "schema": { "type": "object", "description": "A flat object schema of the answers." } },
                "required": ["message", "schema"] }),
        ),
    };
    sbx_wasm::tools::ToolDefinition {
        name: tool.name.clone(),
        description,
        input_schema,
    }
}

/// Register `tools` in `registry`, each asking `peer`, counted in `asked`.
pub(crate) fn client_tools(
    tools: &[ClientTool],
    registry: &mut ToolRegistry,
    peer: &Peer<RoleServer>,
    asked: &Arc<Asked>,
) {
    let handle = tokio::runtime::Handle::current();
    for tool in tools {
        let (tool, peer, asked) = (tool.clone(), peer.clone(), asked.clone());
        registry.register_async(tool.name.clone(), handle.clone(), move |input| {
            let (tool, peer, asked) = (tool.clone(), peer.clone(), asked.clone());
            async move {
                asked.take(&tool)?;
                client_offers(&peer, tool.kind)?;
                match tool.kind {
                    AskKind::Sampling => sample(&peer, &tool, &input).await,
                    AskKind::Elicitation => elicit(&peer, &tool, &input).await,
                }
            }
        });
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(format!("{what}: {}", sbx_wasm::bound::clip(e.to_string())))
}

/// Whether the client declared the capability `kind` needs, or the
/// guest's failure.
pub(crate) fn client_offers(peer: &Peer<RoleServer>, kind: AskKind) -> Result<(), ToolError> {
    let info = peer.peer_info();
    let caps = info.as_ref().map(|i| &i.capabilities);
    let (offered, missing) = match kind {
        AskKind::Sampling => (
            caps.is_some_and(|c| c.sampling.is_some()),
            "the client does not offer sampling (its model cannot be asked)",
        ),
        AskKind::Elicitation => (
            caps.is_some_and(|c| c.elicitation.is_some()),
            "the client does not offer elicitation (its user cannot be asked)",
        ),
    };
    match offered {
        true => Ok(()),
        false => Err(ToolError::Failed(missing.into())),
    }
}

#[allow(deprecated)] // sampling: deprecated from 2026-07-28, served before it
async fn sample(
    peer: &Peer<RoleServer>,
    tool: &ClientTool,
    input: &str,
) -> Result<String, ToolError> {
    let (prompt, system, wanted) = match serde_json::from_str::<Value>(input) {
        Ok(Value::Object(o)) => {
            let prompt = (o.get("prompt").and_then(Value::as_str))
                .ok_or_else(|| ToolError::Failed("`prompt` (a string) is required".into()))?
                .to_string();
            let system = o.get("system").and_then(Value::as_str).map(String::from);
            let wanted = o.get("max_tokens").and_then(Value::as_u64);
            (prompt, system, wanted)
        }
        _ => (input.to_string(), None, None),
    };
    let max_tokens = wanted.map_or(tool.max_tokens, |w| w.min(tool.max_tokens as u64) as u32);
    let mut params =
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
    if let Some(s) = system {
        params = params.with_system_prompt(s);
    }
    let answer = (peer.create_message(params).await).map_err(|e| failed("sampling failed", e))?;
    let text: Vec<String> = (answer.message.content.into_vec().iter())
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if text.is_empty() {
        return Err(ToolError::Failed("the model answered with no text".into()));
    }
    Ok(text.join("\n"))
}

/// The longest message a guest may show the user.
const MAX_MESSAGE: usize = 4096;

async fn elicit(
    peer: &Peer<RoleServer>,
    tool: &ClientTool,
    input: &str,
) -> Result<String, ToolError> {
    let bad = || {
        ToolError::Failed("the input is {\"message\": text, \"schema\": an object schema}".into())
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(input) else {
        return Err(bad());
    };
    let message = o.get("message").and_then(Value::as_str).ok_or_else(bad)?;
    if message.len() > MAX_MESSAGE {
        return Err(ToolError::Failed(format!(
            "the message is {} bytes; at most {MAX_MESSAGE} are shown",
            message.len()
        )));
    }
    let schema: ElicitationSchema = (o.get("schema").cloned())
        .map(serde_json::from_value)
        .ok_or_else(bad)?
        .map_err(|e| failed("the schema is not one elicitation takes", e))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("Sandboxed code asks (tool {}): {message}", tool.name),
        requested_schema: schema,
    };
    let answer =
        (peer.create_elicitation(params).await).map_err(|e| failed("elicitation failed", e))?;
    Ok(json!({ "action": answer.action, "content": answer.content }).to_string())
}
