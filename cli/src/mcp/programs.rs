//! The program calls: `run_python`, `run_javascript`, `run_wasm` and the catalog's script
//! tools, each made from its arguments into the `Program` a run takes (a
//! mistake is the reason it is refused, before anything runs).

use super::door::Door;
use super::runs;
use crate::scripts::Lang;
use rmcp::model::JsonObject;
use serde_json::Value;

/// Whether `tool` is a program call (one that may become a task); the
/// rest are single ops.
pub(crate) fn is_program(door: &Door, tool: &str) -> bool {
    matches!(
        tool,
        "run_python" | "run_python_data" | "run_javascript" | "run_wasm"
    ) || door.catalog.tool(tool).is_some()
}

/// The program a call of `tool` (one [`is_program`] names) asks for, or
/// why it is refused.
pub(crate) fn program(door: &Door, tool: &str, args: &JsonObject) -> Result<runs::Program, String> {
    match tool {
        "run_python" => script(door, Lang::Python, args),
        "run_python_data" => script(door, Lang::Data, args),
        "run_javascript" => script(door, Lang::JavaScript, args),
        "run_wasm" => component(door, args),
        _ => script_tool(door, tool, args),
    }
}

fn string(args: &JsonObject, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// The `labels` argument: labels of the grant's `[flow]` that the call's
/// code or input carries (the run starts holding them). An unknown label
/// is refused: a typo would otherwise leave the input unlabelled.
fn input_labels(door: &Door, args: &JsonObject) -> Result<sbx_wasm::flow::Mark, String> {
    let mut mark = sbx_wasm::flow::Mark::default();
    let items = match args.get("labels") {
        None | Some(Value::Null) => return Ok(mark),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("`labels` must be a list of strings".into()),
    };
    for item in items {
        let label = item.as_str().ok_or("`labels` must be a list of strings")?;
        if !door.caps.flow().knows(label) {
            return Err(format!(
                "`labels`: {} is not a label of this server's grant",
                sbx_wasm::bound::quote(label)
            ));
        }
        mark.join(label, "the call's arguments");
    }
    Ok(mark)
}

fn run_args(args: &JsonObject) -> Result<(Vec<String>, Vec<u8>), String> {
    let list = match args.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or("`args` must be a list of strings")?,
        Some(_) => return Err("`args` must be a list of strings".into()),
    };
    let stdin = string(args, "stdin")?.unwrap_or_default().into_bytes();
    Ok((list, stdin))
}

/// `run_python` or `run_javascript`: `code` run in that language's runner.
fn script(door: &Door, lang: Lang, args: &JsonObject) -> Result<runs::Program, String> {
    let agent = match lang {
        Lang::Python => door.python.as_ref().map(|r| r.agent()),
        Lang::JavaScript => door.js.as_ref().map(|r| r.agent()),
        Lang::Data => door.data.as_ref().map(|r| r.agent()),
    };
    let Some(agent) = agent else {
        return Err(format!(
            "{} is not offered: this server has no {} runner",
            lang.tool(),
            lang.name()
        ));
    };
    let code = string(args, "code")?.ok_or("`code` is required")?;
    let labels = input_labels(door, args)?;
    let (args, stdin) = run_args(args)?;
    Ok(runs::Program {
        agent: agent.clone(),
        name: lang.program().into(),
        args,
        stdin,
        source: Some((lang, code)),
        shape: None,
        labels,
    })
}

/// A catalog script tool: its arguments checked against its schema (a
/// mismatch is refused before anything runs), then its script run with
/// them on stdin as JSON.
pub(crate) fn script_tool(
    door: &Door,
    tool: &str,
    args: &JsonObject,
) -> Result<runs::Program, String> {
    let (Some(t), Some(runner)) = (door.catalog.tool(tool), &door.python) else {
        return Err(format!("the catalog tool {tool} has no Python runner"));
    };
    let args = Value::Object(args.clone());
    t.check(&args)?;
    Ok(runs::Program {
        agent: runner.agent().clone(),
        name: t.name.clone(),
        args: Vec::new(),
        stdin: args.to_string().into_bytes(),
        source: Some((Lang::Python, t.source.clone())),
        shape: Some(t.output),
        labels: Default::default(),
    })
}

fn component(door: &Door, args: &JsonObject) -> Result<runs::Program, String> {
    let name = string(args, "component")?.ok_or("`component` is required")?;
    // A first use compiles: off the async workers.
    let agent = tokio::task::block_in_place(|| door.component(&name))?;
    let labels = input_labels(door, args)?;
    let (args, stdin) = run_args(args)?;
    Ok(runs::Program {
        agent,
        name,
        args,
        stdin,
        source: None,
        shape: None,
        labels,
    })
}
