//! The granted tools as a TypeScript declaration, for `code_mode_ts`: each
//! tool a function of the runner's global `tools`, its input schema as a
//! TypeScript type, so a model writes calls its types check. The schema
//! keywords a tool's input uses most (type, properties, required, items,
//! enum, const, anyOf/oneOf, nullable types) become types; anything else,
//! and anything nested deeper than four levels, is `unknown`. Names and
//! descriptions are the operator's, written so they cannot end the comment
//! or the declaration they sit in.

use serde_json::Value;
use std::fmt::Write as _;

const MAX_DEPTH: usize = 4;

fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `name` as a property key: bare when it is an identifier, else quoted.
fn key(name: &str) -> String {
    if identifier(name) {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_else(|_| "\"?\"".into())
    }
}

/// `text` inside a `/** ... */` comment, on one line.
fn comment(text: &str) -> String {
    text.replace("*/", "*\\/").replace(['\n', '\r'], " ")
}

/// The TypeScript type a JSON schema describes.
pub(crate) fn schema_type(schema: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Some(obj) = schema.as_object() else {
        // `true` (anything) and malformed schemas alike.
        return "unknown".into();
    };
    if let Some(c) = obj.get("const") {
        return serde_json::to_string(c).unwrap_or_else(|_| "unknown".into());
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        let parts: Vec<String> = values
            .iter()
            .filter_map(|v| serde_json::to_string(v).ok())
            .collect();
        return if parts.is_empty() {
            "never".into()
        } else {
            parts.join(" | ")
        };
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = obj.get(union) {
            let parts: Vec<String> = alts.iter().map(|a| schema_type(a, depth + 1)).collect();
            return format!("({})", parts.join(" | "));
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) => one_type(t, obj, depth),
        Some(Value::Array(ts)) => {
            let parts: Vec<String> = ts
                .iter()
                .filter_map(Value::as_str)
                .map(|t| one_type(t, obj, depth))
                .collect();
            format!("({})", parts.join(" | "))
        }
        _ if obj.contains_key("properties") => one_type("object", obj, depth),
        _ => "unknown".into(),
    }
}

fn one_type(t: &str, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
    match t {
        "string" => "string".into(),
        "number" | "integer" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match obj.get("items") {
            Some(items) => format!("Array<{}>", schema_type(items, depth + 1)),
            None => "unknown[]".into(),
        },
        "object" => {
            let required: Vec<&str> = match obj.get("required") {
                Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let Some(Value::Object(props)) = obj.get("properties") else {
                return "Record<string, unknown>".into();
            };
            let fields: Vec<String> = props
                .iter()
                .map(|(name, s)| {
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{}{optional}: {}", key(name), schema_type(s, depth + 1))
                })
                .collect();
            if fields.is_empty() {
                "Record<string, unknown>".into()
            } else {
                format!("{{ {} }}", fields.join("; "))
            }
        }
        _ => "unknown".into(),
    }
}

/// `declare const tools: { ... }` for `tools`, each with its description.
pub(crate) fn tools_declaration(tools: &[sbx_wasm::tools::ToolDefinition]) -> String {
    let mut out = String::from("```ts\ndeclare const tools: {\n");
    for t in tools {
        let description = match t.description.is_empty() {
            true => "(no description)".to_string(),
            false => comment(&t.description),
        };
        // A tool without a schema takes any input (a string is sent as it is).
        let input = match &t.input_schema {
            Value::Object(o) if !o.is_empty() => schema_type(&t.input_schema, 0),
            _ => "unknown".into(),
        };
        let _ = writeln!(out, "  /** {description} */");
        let _ = writeln!(out, "  {}(input: {input}): Promise<any>;", key(&t.name));
    }
    out += "};\n```\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_become_typescript_types() {
        let s = json!({
            "type": "object",
            "properties": {
                "text": { "type": "string" },
                "n": { "type": "integer" },
                "mode": { "enum": ["fast", "slow"] },
                "tags": { "type": "array", "items": { "type": "string" } },
                "maybe": { "type": ["string", "null"] },
                "odd-name": { "type": "boolean" },
            },
            "required": ["text"],
        });
        // The fields in the schema map's order, which serde_json's features
        // decide (sorted, or as written): compared as a set.
        let t = schema_type(&s, 0);
        let inner = t
            .strip_prefix("{ ")
            .and_then(|t| t.strip_suffix(" }"))
            .unwrap();
        let mut fields: Vec<&str> = inner.split("; ").collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "\"odd-name\"?: boolean",
                "maybe?: (string | null)",
                "mode?: \"fast\" | \"slow\"",
                "n?: number",
                "tags?: Array<string>",
                "text: string",
            ]
        );
        assert_eq!(schema_type(&json!(true), 0), "unknown");
        assert_eq!(
            schema_type(&json!({ "type": "object" }), 0),
            "Record<string, unknown>"
        );
    }

    #[test]
    fn depth_and_hostile_text_are_bounded() {
        let mut s = json!({ "type": "string" });
        for _ in 0..50 {
            s = json!({ "type": "array", "items": s });
        }
        let t = schema_type(&s, 0);
        assert!(t.contains("unknown") && t.len() < 100, "{t}");
        let tools = [sbx_wasm::tools::ToolDefinition {
            name: "x*/ }; evil(); /*".into(),
            description: "ends */ here\nand a line".into(),
            input_schema: json!({}),
        }];
        let d = tools_declaration(&tools);
        assert!(d.contains("/** ends *\\/ here and a line */"), "{d}");
        assert!(d.contains("  \"x*/ }; evil(); /*\"(input: unknown)"), "{d}");
    }
}
