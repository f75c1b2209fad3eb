//! The prompts the MCP door lists: `code_mode` and `code_mode_ts`, which
//! hand the model the grant as an API (the folders it may read and write,
//! the origins it may reach, the granted tools with their schemas) and ask
//! it to do the task in one `run_python` script, or one `run_javascript`
//! TypeScript module (its tools as typed functions, their input schemas as
//! TypeScript types). Each is listed only when its tool is offered.
//!
//! The text is made from the grant the listing shows, never from a host
//! path: a mount is named by its guest path.

use super::listing::Offer;
use crate::scripts::Lang;
use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;

/// The Python prompt's name.
pub(crate) const CODE_MODE: &str = "code_mode";
/// The TypeScript prompt's name.
pub(crate) const CODE_MODE_TS: &str = "code_mode_ts";

/// The prompt for `lang`: its name and what it says it does.
fn prompt_of(lang: Lang) -> (&'static str, &'static str) {
    match lang {
        Lang::Python | Lang::Data => (
            CODE_MODE,
            "Do a task in one sandboxed Python script: the grant (folders, origins, tools) as an \
             API, and how a refusal shows.",
        ),
        Lang::JavaScript => (
            CODE_MODE_TS,
            "Do a task in one sandboxed TypeScript module: the grant (folders, origins, tools as \
             typed functions) as an API, and how a refusal shows.",
        ),
    }
}

/// The languages whose runner the door offers.
fn offered(offer: &Offer<'_>) -> Vec<Lang> {
    let mut out = Vec::new();
    if offer.python {
        out.push(Lang::Python);
    }
    if offer.js {
        out.push(Lang::JavaScript);
    }
    out
}

/// Whether `name` is one of the door's own prompts (a catalog prompt may
/// not take one).
pub(crate) fn built_in(name: &str) -> bool {
    name == CODE_MODE || name == CODE_MODE_TS
}

/// Everything listed: `code_mode` (with a Python runner), then the
/// catalog's prompts.
pub(crate) fn list(offer: &Offer<'_>) -> Vec<Prompt> {
    let mut listed = code_mode(offer);
    for p in &offer.catalog.prompts {
        let args = (p.arguments.iter())
            .map(|a| {
                let arg = PromptArgument::new(&a.name).with_required(a.required);
                match &a.description {
                    Some(d) => arg.with_description(d),
                    None => arg,
                }
            })
            .collect();
        listed.push(Prompt::new(&p.name, Some(&p.description), Some(args)));
    }
    listed
}

fn code_mode(offer: &Offer<'_>) -> Vec<Prompt> {
    let task = PromptArgument::new("task")
        .with_description("What to do, in words (the user's request).")
        .with_required(true);
    offered(offer)
        .into_iter()
        .map(|lang| {
            let (name, description) = prompt_of(lang);
            Prompt::new(name, Some(description), Some(vec![task.clone()]))
        })
        .collect()
}

/// The prompt `name` with `args`, or why there is none.
pub(crate) fn get(
    offer: &Offer<'_>,
    name: &str,
    args: Option<&serde_json::Map<String, Value>>,
) -> Result<GetPromptResult, String> {
    let Some(lang) = offered(offer).into_iter().find(|l| prompt_of(*l).0 == name) else {
        return Err(format!("no prompt {}", sbx_wasm::bound::quote(name)));
    };
    let task = match args.and_then(|a| a.get("task")) {
        Some(Value::String(t)) if !t.trim().is_empty() => t.as_str(),
        Some(Value::String(_)) | None => return Err("`task` is required".into()),
        Some(_) => return Err("`task` must be a string".into()),
    };
    let text = format!("{}\n\nThe task:\n{task}", grant_as_api(offer, lang));
    let tool = lang.tool();
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(format!("Do the task in one {tool} script under the grant.")),
    )
}

/// The grant, said to a model that will write the script in `lang`.
fn grant_as_api(offer: &Offer<'_>, lang: Lang) -> String {
    let caps = offer.caps;
    let mut s = match lang {
        Lang::Python | Lang::Data => String::from(
            "Do the task below by calling the run_python tool once with a whole Python 3 \
             script (standard library, plus the packages the runner was built with). The \
             script runs in a sandbox that lets it do only this:\n",
        ),
        Lang::JavaScript => String::from(
            "Do the task below by calling the run_javascript tool once with a whole \
             TypeScript module (an ES module: top-level await works; types are stripped, not \
             checked; no npm packages: node's fs, fs/promises, path, util, buffer and crypto \
             are there). The module runs in a sandbox that lets it do only this:\n",
        ),
    };
    let (reads, writes): (Vec<_>, Vec<_>) = caps
        .mounts()
        .iter()
        .partition(|m| m.access.as_str() == "read");
    let names = |ms: &[&sbx_wasm::fs::Mount]| -> String {
        ms.iter()
            .map(|m| m.guest.as_str().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    s += &match reads.is_empty() {
        true => "- Read files: nowhere.\n".to_string(),
        false => format!("- Read files under: {}.\n", names(&reads)),
    };
    let mut written = names(&writes);
    if offer.scratch {
        if !written.is_empty() {
            written += ", ";
        }
        written += "/scratch (kept between this session's calls)";
    }
    s += &match written.is_empty() {
        true => "- Write files: nowhere.\n".to_string(),
        false => format!("- Write (and read) files under: {written}.\n"),
    };
    let egress = caps.egress();
    s += &if egress.allows_all() {
        "- Reach any http(s) URL".to_string()
    } else if egress.rules().is_empty() {
        "- Reach the network: never".to_string()
    } else {
        let rules: Vec<String> = egress.rules().iter().map(|r| r.to_string()).collect();
        format!("- Reach only: {}", rules.join(", "))
    };
    s += match lang {
        Lang::Python | Lang::Data => {
            " (with urllib.request, http.client, requests, or sbx.fetch(url, method, \
             headers, body); raw sockets are refused).\n"
        }
        Lang::JavaScript => " (with the global fetch).\n",
    };
    // The granted tools, and the catalog's client tools the grant allows.
    let asking = (offer.catalog.client_tools.iter())
        .filter(|t| caps.tools().contains(&t.name))
        .map(super::catalog::client_tool_definition);
    let tools: Vec<_> = offer.granted_tools.iter().cloned().chain(asking).collect();
    if tools.is_empty() {
        s += "- Call tools: none are granted.\n";
    } else if lang == Lang::JavaScript {
        s += "- Call these tools as functions of the global `tools`; each takes its input \
              (sent as JSON) and resolves to the tool's output, parsed when it is JSON:\n";
        s += &super::typescript::tools_declaration(&tools);
    } else {
        s += "- Call these tools with sbx.call_tool(name, input): input a dict (sent as \
              JSON) that the tool's input schema accepts, or a string where it has none; it \
              returns the tool's output as a string:\n";
        for d in &tools {
            let description = match d.description.is_empty() {
                true => "(no description)",
                false => d.description.as_str(),
            };
            s += &format!(
                "  - {}: {description} Input schema: {}\n",
                d.name, d.input_schema
            );
        }
    }
    s += match lang {
        Lang::Python | Lang::Data => {
            "Anything else is refused: the operation raises sbx.Denied (a PermissionError) \
             whose `violation` names the rule, and the refusal is on record."
        }
        Lang::JavaScript => {
            "Anything else is refused: the call throws (or its promise rejects with) \
             SbxDenied, whose `violation` names the rule, and the refusal is on record."
        }
    };
    s += " Do not try to get around a refusal; say what was refused instead. Print the \
          results the user needs; the tool returns stdout, stderr and the exit status.";
    s
}
