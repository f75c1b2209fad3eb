//! The catalog file: its TOML form, and every check made when the door
//! starts, so a mistake is a start-up error naming its key, never a
//! client's surprise.
//!
//! ```toml
//! [tools.summarise]            # a script tool, run under the grant
//! python = "tools/summarise.py"   # relative to the catalog file
//! description = "Summarise a CSV under /data."
//! input_schema = { type = "object", properties = { file = { type = "string" } } }
//! output = "text"              # or "content": stdout is MCP content blocks
//!
//! [client_tools.llm]           # the client's model; the grant must allow "llm"
//! ask = "sampling"             # or "elicitation"
//! max_calls = 10               # per session
//! max_tokens = 1024            # sampling: the most an answer may be
//!
//! [prompts.review]
//! description = "Review a file."
//! arguments = [{ name = "file", required = true, values = ["a.py", "b.py"] }]
//! messages = [{ role = "user", text = "Review {file}." },
//!             { role = "user", image = "/data/diagram.png" },
//!             { role = "user", resource = { uri = "{file}", path = "/data/notes.txt" } }]
//!
//! [resources."docs://readme"]  # one guest file, read through the gate
//! path = "/data/README.md"
//!
//! [templates."docs://page/{id}"]  # a script, given {"id": ...} on stdin
//! python = "resources/page.py"
//! mime_type = "text/markdown"
//! ```

use super::prompts::{ArgDef, Embed, MessageBody, PromptDef, PromptMessageDef, placeholders};
use super::{
    AskKind, Catalog, ClientTool, FileResource, OutputKind, ScriptTemplate, ScriptTool, UriTemplate,
};
use anyhow::{Context, Result, bail};
use rmcp::model::Role;
use sbx_wasm::fs::GuestPath;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The largest catalog file, and the largest script it names.
const MAX_FILE: u64 = 1024 * 1024;
/// The most entries of each kind.
const MAX_ENTRIES: usize = 1_000;
/// The most values one prompt argument declares (for completions).
const MAX_VALUES: usize = 10_000;
/// The most messages one prompt has.
const MAX_MESSAGES: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    tools: BTreeMap<String, ToolEntry>,
    #[serde(default)]
    client_tools: BTreeMap<String, ClientEntry>,
    #[serde(default)]
    prompts: BTreeMap<String, PromptEntry>,
    #[serde(default)]
    resources: BTreeMap<String, ResourceEntry>,
    #[serde(default)]
    templates: BTreeMap<String, TemplateEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolEntry {
    python: String,
    description: String,
    input_schema: Option<toml::Value>,
    #[serde(default)]
    output: OutputKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientEntry {
    ask: AskKind,
    max_calls: Option<u32>,
    max_tokens: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptEntry {
    description: String,
    #[serde(default)]
    arguments: Vec<ArgEntry>,
    messages: Vec<MessageEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArgEntry {
    name: String,
    description: Option<String>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageEntry {
    role: String,
    text: Option<String>,
    image: Option<String>,
    resource: Option<EmbedEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmbedEntry {
    uri: String,
    text: Option<String>,
    path: Option<String>,
    mime_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceEntry {
    path: String,
    name: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateEntry {
    python: String,
    name: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

/// What the catalog is checked against.
pub(crate) struct Checks<'a> {
    /// Whether a Python runner is loaded (scripts need one).
    pub(crate) python: bool,
    /// Names a catalog tool may not take (the door's own, the grant's).
    pub(crate) taken: &'a dyn Fn(&str) -> bool,
    /// Whether a guest path is under a folder sessions see.
    pub(crate) granted: &'a dyn Fn(&GuestPath) -> bool,
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

fn read_limited(path: &Path) -> Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        bail!(
            "{} is not a file of at most {MAX_FILE} bytes",
            path.display()
        );
    }
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {} as UTF-8", path.display()))
}

fn script(base: &Path, key: &str, file: &str, cx: &Checks<'_>) -> Result<String> {
    if !cx.python {
        bail!("{key}: a script needs the Python runner, and this server has none");
    }
    read_limited(&base.join(file)).with_context(|| format!("{key}.python"))
}

/// `path` checked as the gate checks a guest path, and under the grant.
fn guest_file(key: &str, path: &str, cx: &Checks<'_>) -> Result<String> {
    let Ok(guest) = sbx_wasm::fs::check_path(path) else {
        bail!("{key}: {path:?} is not an absolute guest path without `..`");
    };
    if !(cx.granted)(&guest) {
        bail!("{key}: {path} is under no folder of the grant");
    }
    Ok(guest.as_str().to_string())
}

fn check_uri(key: &str, uri: &str) -> Result<()> {
    let scheme = uri.split_once("://").map(|(s, _)| s).unwrap_or("");
    let ok = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && uri.len() <= 1024;
    if !ok {
        bail!(
            "{key}: {uri:?} is not a URI with a scheme (e.g. docs://readme), of at most 1024 bytes"
        );
    }
    if scheme == "sbx" {
        bail!("{key}: sbx:// names the grant's own files; choose another scheme");
    }
    Ok(())
}

fn input_schema(key: &str, value: Option<toml::Value>) -> Result<serde_json::Value> {
    let schema = match value {
        None => serde_json::json!({ "type": "object" }),
        Some(toml::Value::String(text)) => {
            serde_json::from_str(&text).with_context(|| key.to_string())?
        }
        Some(table) => serde_json::to_value(&table).with_context(|| key.to_string())?,
    };
    let object = (schema.as_object()).is_some_and(|o| o.get("type").is_none_or(|t| t == "object"));
    if !object {
        bail!("{key}: not an object schema (a tool's arguments are an object)");
    }
    Ok(schema)
}

/// Load and check the catalog at `path`.
pub(crate) fn load(path: &Path, cx: &Checks<'_>) -> Result<Catalog> {
    let text = read_limited(path).context("--catalog")?;
    let file: CatalogFile =
        toml::from_str(&text).with_context(|| format!("--catalog {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let counts = [
        file.tools.len(),
        file.client_tools.len(),
        file.prompts.len(),
        file.resources.len(),
        file.templates.len(),
    ];
    if counts.iter().any(|&n| n > MAX_ENTRIES) {
        bail!("--catalog: at most {MAX_ENTRIES} entries of each kind");
    }
    let mut catalog = Catalog::default();
    let mut names = BTreeSet::new();
    let mut claim = |key: &str, name: &str| -> Result<()> {
        if !valid_name(name) {
            bail!("{key}: {name:?} is not a tool name (1 to 64 of a-z A-Z 0-9 _ - .)");
        }
        if (cx.taken)(name) || !names.insert(name.to_string()) {
            bail!("{key}: the name {name} is taken (by the door, the grant or the catalog)");
        }
        Ok(())
    };
    for (name, t) in file.tools {
        let key = format!("tools.{name}");
        claim(&key, &name)?;
        let schema = input_schema(&format!("{key}.input_schema"), t.input_schema)?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            anyhow::anyhow!(
                "{key}.input_schema does not load: {}",
                sbx_wasm::bound::clip(e.to_string())
            )
        })?;
        catalog.tools.push(ScriptTool {
            source: script(base, &key, &t.python, cx)?,
            name,
            description: t.description,
            input_schema: schema,
            validator: Arc::new(validator),
            output: t.output,
        });
    }
    for (name, c) in file.client_tools {
        let key = format!("client_tools.{name}");
        claim(&key, &name)?;
        let max_calls = c.max_calls.unwrap_or(10);
        let max_tokens = c.max_tokens.unwrap_or(1024);
        if !(1..=10_000).contains(&max_calls) || !(1..=1_000_000).contains(&max_tokens) {
            bail!("{key}: max_calls is 1 to 10000 and max_tokens 1 to 1000000");
        }
        if c.kind_is_elicitation() && c.max_tokens.is_some() {
            bail!("{key}.max_tokens: only a sampling tool has one");
        }
        catalog.client_tools.push(ClientTool {
            name,
            kind: c.ask,
            max_calls,
            max_tokens,
        });
    }
    for (name, p) in file.prompts {
        catalog
            .prompts
            .push(prompt(&format!("prompts.{name}"), name, p, cx)?);
    }
    for (uri, r) in file.resources {
        let key = format!("resources.{uri:?}");
        check_uri(&key, &uri)?;
        let path = guest_file(&format!("{key}.path"), &r.path, cx)?;
        catalog.resources.push(FileResource {
            name: r.name.unwrap_or_else(|| uri.clone()),
            uri,
            path,
            description: r.description,
            mime_type: r.mime_type,
        });
    }
    for (text, t) in file.templates {
        let key = format!("templates.{text:?}");
        check_uri(&key, &text)?;
        let template = UriTemplate::parse(&text).map_err(|why| anyhow::anyhow!("{key}: {why}"))?;
        catalog.templates.push(ScriptTemplate {
            source: script(base, &key, &t.python, cx)?,
            name: t.name.unwrap_or_else(|| text.clone()),
            template,
            description: t.description,
            mime_type: t.mime_type.unwrap_or_else(|| "text/plain".into()),
        });
    }
    Ok(catalog)
}

impl ClientEntry {
    fn kind_is_elicitation(&self) -> bool {
        self.ask == AskKind::Elicitation
    }
}

fn prompt(key: &str, name: String, p: PromptEntry, cx: &Checks<'_>) -> Result<PromptDef> {
    if !valid_name(&name) || crate::mcp::prompts::built_in(&name) {
        bail!(
            "{key}: {name:?} is not a free prompt name (1 to 64 of a-z A-Z 0-9 _ - ., not code_mode or code_mode_ts)"
        );
    }
    let mut declared = BTreeSet::new();
    for a in &p.arguments {
        if !valid_name(&a.name) || !declared.insert(a.name.clone()) {
            bail!(
                "{key}.arguments: {:?} is not a valid, new argument name",
                a.name
            );
        }
        if a.values.len() > MAX_VALUES {
            bail!(
                "{key}.arguments: {} has more than {MAX_VALUES} values",
                a.name
            );
        }
    }
    if p.messages.is_empty() || p.messages.len() > MAX_MESSAGES {
        bail!("{key}.messages: 1 to {MAX_MESSAGES} messages");
    }
    let uses = |k: &str, text: &str| -> Result<()> {
        let names = placeholders(text).map_err(|why| anyhow::anyhow!("{k}: {why}"))?;
        match names.iter().find(|n| !declared.contains(*n)) {
            Some(n) => bail!("{k}: {{{n}}} is not an argument of the prompt"),
            None => Ok(()),
        }
    };
    let mut messages = Vec::new();
    for (i, m) in p.messages.into_iter().enumerate() {
        let k = format!("{key}.messages[{i}]");
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => bail!("{k}.role: {other:?} is not user or assistant"),
        };
        let body = match (m.text, m.image, m.resource) {
            (Some(text), None, None) => {
                uses(&format!("{k}.text"), &text)?;
                MessageBody::Text(text)
            }
            (None, Some(image), None) => {
                let lower = image.to_ascii_lowercase();
                if ![".png", ".jpg", ".jpeg", ".gif", ".webp"]
                    .iter()
                    .any(|e| lower.ends_with(e))
                {
                    bail!("{k}.image: {image:?} is not a .png, .jpg, .jpeg, .gif or .webp file");
                }
                MessageBody::Image(guest_file(&format!("{k}.image"), &image, cx)?)
            }
            (None, None, Some(r)) => {
                uses(&format!("{k}.resource.uri"), &r.uri)?;
                let body = match (r.text, r.path) {
                    (Some(text), None) => {
                        uses(&format!("{k}.resource.text"), &text)?;
                        Embed::Text(text)
                    }
                    (None, Some(path)) => {
                        Embed::Path(guest_file(&format!("{k}.resource.path"), &path, cx)?)
                    }
                    _ => bail!("{k}.resource: exactly one of text and path"),
                };
                MessageBody::Resource {
                    uri: r.uri,
                    mime_type: r.mime_type,
                    body,
                }
            }
            _ => bail!("{k}: exactly one of text, image and resource"),
        };
        messages.push(PromptMessageDef { role, body });
    }
    let arguments = (p.arguments.into_iter())
        .map(|a| ArgDef {
            name: a.name,
            description: a.description,
            required: a.required,
            values: a.values,
        })
        .collect();
    Ok(PromptDef {
        name,
        description: p.description,
        arguments,
        messages,
    })
}

/// The catalog at `path`, checked against the grant `caps`: its names
/// free of `taken`, its guest paths under a mount (or `scratch`, the
/// sessions' scratch folder, when they have one), its client tools ones
/// the grant allows (else a warning: no guest could call them).
pub(crate) fn load_for_grant(
    path: &Path,
    caps: &sbx_wasm::Capabilities,
    python: bool,
    scratch: Option<&str>,
    taken: &dyn Fn(&str) -> bool,
) -> Result<Catalog> {
    let scratch = scratch
        .map(sbx_wasm::fs::check_path)
        .transpose()
        .map_err(|d| anyhow::anyhow!(d.message))?;
    let granted = |p: &GuestPath| {
        (caps.mounts().iter()).any(|m| p.is_under(&m.guest))
            || scratch.as_ref().is_some_and(|s| p.is_under(s))
    };
    let checks = Checks {
        python,
        taken,
        granted: &granted,
    };
    let catalog = load(path, &checks)?;
    for t in &catalog.client_tools {
        if !caps.tools().contains(&t.name) {
            tracing::warn!(
                tool = %t.name,
                "the catalog's client tool is not in the grant's [tools] allow: no guest may call it"
            );
        }
    }
    Ok(catalog)
}
