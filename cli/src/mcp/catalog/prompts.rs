//! A catalog prompt: messages whose text holds `{argument}` placeholders
//! (`{{` and `}}` for braces), images and embedded resources named by
//! guest path (read through the gate when the prompt is got), and, for an
//! argument with a closed set of values, the values `completion/complete`
//! offers.

use rmcp::model::Role;
use serde_json::{Map, Value};

/// The longest all of one request's argument values may be, together.
const MAX_ARGS_BYTES: usize = 256 * 1024;
/// The most values one completion answers with.
pub(crate) const MAX_COMPLETIONS: usize = 100;

pub(crate) struct ArgDef {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
    pub(crate) values: Vec<String>,
}

/// What an embedded resource holds: text given in the catalog, or a guest
/// file read through the gate.
pub(crate) enum Embed {
    Text(String),
    Path(String),
}

pub(crate) enum MessageBody {
    Text(String),
    /// A guest path to an image file.
    Image(String),
    Resource {
        uri: String,
        mime_type: Option<String>,
        body: Embed,
    },
}

pub(crate) struct PromptMessageDef {
    pub(crate) role: Role,
    pub(crate) body: MessageBody,
}

pub(crate) struct PromptDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) arguments: Vec<ArgDef>,
    pub(crate) messages: Vec<PromptMessageDef>,
}

/// The placeholders in `text`, or why it is malformed.
pub(crate) fn placeholders(text: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    fill_with(text, |name| {
        names.push(name.to_string());
        Ok(String::new())
    })?;
    Ok(names)
}

fn fill_with(
    text: &str,
    mut value: impl FnMut(&str) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(r) = tail.strip_prefix("{{") {
            out.push('{');
            rest = r;
        } else if let Some(r) = tail.strip_prefix("}}") {
            out.push('}');
            rest = r;
        } else if tail.starts_with('}') {
            return Err("has a `}` without its `{` (write `}}` for a brace)".into());
        } else {
            let close = tail.find('}').ok_or("has a `{` without its `}`")?;
            out.push_str(&value(&tail[1..close])?);
            rest = &tail[close + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

impl PromptDef {
    /// The given arguments, checked: every required one present, each a
    /// string, none undeclared, all within [`MAX_ARGS_BYTES`].
    pub(crate) fn arguments_of(
        &self,
        given: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>, String> {
        let given = given.cloned().unwrap_or_default();
        let mut size = 0;
        for (k, v) in &given {
            if !self.arguments.iter().any(|a| &a.name == k) {
                return Err(format!(
                    "the prompt {} has no argument {}",
                    self.name,
                    sbx_wasm::bound::quote(k)
                ));
            }
            let s = v.as_str().ok_or(format!("`{k}` must be a string"))?;
            size += s.len();
        }
        if size > MAX_ARGS_BYTES {
            return Err(format!(
                "the arguments are {size} bytes; at most {MAX_ARGS_BYTES} are taken"
            ));
        }
        if let Some(a) =
            (self.arguments.iter()).find(|a| a.required && !given.contains_key(&a.name))
        {
            return Err(format!("`{}` is required", a.name));
        }
        Ok(given)
    }

    /// `text` with the arguments put in (a declared, optional argument not
    /// given is empty).
    pub(crate) fn fill(&self, text: &str, args: &Map<String, Value>) -> Result<String, String> {
        fill_with(text, |name| {
            Ok(args
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string())
        })
    }

    /// The values of `argument` that begin with `prefix` (ignoring case),
    /// at most [`MAX_COMPLETIONS`], and how many there are in all.
    pub(crate) fn complete(&self, argument: &str, prefix: &str) -> (Vec<String>, usize) {
        let Some(arg) = self.arguments.iter().find(|a| a.name == argument) else {
            return (Vec::new(), 0);
        };
        let prefix = prefix.to_lowercase();
        let all: Vec<&String> = (arg.values.iter())
            .filter(|v| v.to_lowercase().starts_with(&prefix))
            .collect();
        let total = all.len();
        (
            all.into_iter().take(MAX_COMPLETIONS).cloned().collect(),
            total,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt() -> PromptDef {
        PromptDef {
            name: "p".into(),
            description: "d".into(),
            arguments: vec![
                ArgDef {
                    name: "city".into(),
                    description: None,
                    required: true,
                    values: vec!["Paris".into(), "Park".into(), "Rome".into()],
                },
                ArgDef {
                    name: "note".into(),
                    description: None,
                    required: false,
                    values: vec![],
                },
            ],
            messages: vec![],
        }
    }

    #[test]
    fn placeholders_are_filled_and_braces_escaped() {
        let p = prompt();
        let args = p.arguments_of(json!({"city": "Oslo"}).as_object()).unwrap();
        assert_eq!(
            p.fill("to {city}{note} {{x}}", &args).unwrap(),
            "to Oslo {x}"
        );
        assert_eq!(
            placeholders("a {city} {{b}} {note}").unwrap(),
            ["city", "note"]
        );
        assert!(placeholders("a {city").is_err());
        assert!(placeholders("a }").is_err());
    }

    #[test]
    fn arguments_are_checked() {
        let p = prompt();
        assert!(
            p.arguments_of(None)
                .unwrap_err()
                .contains("`city` is required")
        );
        assert!(p.arguments_of(json!({"city": 1}).as_object()).is_err());
        assert!(
            p.arguments_of(json!({"city": "x", "other": "y"}).as_object())
                .is_err()
        );
        let big = "x".repeat(MAX_ARGS_BYTES + 1);
        assert!(p.arguments_of(json!({"city": big}).as_object()).is_err());
    }

    #[test]
    fn completion_filters_by_prefix() {
        let p = prompt();
        assert_eq!(
            p.complete("city", "pa"),
            (vec!["Paris".into(), "Park".into()], 2)
        );
        assert_eq!(
            p.complete("city", ""),
            (vec!["Paris".into(), "Park".into(), "Rome".into()], 3)
        );
        assert_eq!(p.complete("note", "x"), (vec![], 0));
        assert_eq!(p.complete("nope", "x"), (vec![], 0));
    }
}
