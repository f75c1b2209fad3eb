//! URI templates of the simplest kind (RFC 6570 level 1): literal text and
//! `{name}` variables, e.g. `test://template/{id}/data`. A variable's value
//! is one segment: 1 to [`MAX_VALUE`] bytes once percent-decoded, no `/`,
//! `?`, `#` or NUL, so a read can never name more than the template says.

use serde_json::{Map, Value};

/// The longest value a variable takes, in bytes.
const MAX_VALUE: usize = 256;
/// The longest template.
const MAX_TEMPLATE: usize = 1024;

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Var(String),
}

/// A parsed template.
#[derive(Clone, Debug)]
pub(crate) struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parse `text`, or say why it is not a template this door takes.
    pub(crate) fn parse(text: &str) -> Result<UriTemplate, String> {
        if text.len() > MAX_TEMPLATE {
            return Err(format!("is longer than {MAX_TEMPLATE} bytes"));
        }
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let close = rest[open..]
                .find('}')
                .map(|c| open + c)
                .ok_or("has a `{` without its `}`")?;
            let name = &rest[open + 1..close];
            let ok = !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok {
                return Err(format!(
                    "has the variable {{{name}}}: a variable is 1 to 64 of A-Z a-z 0-9 _ \
                     (only the simplest form, `{{name}}`, is taken)"
                ));
            }
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            } else if matches!(parts.last(), Some(Part::Var(_))) {
                return Err("has two variables with nothing between them".into());
            }
            if parts.iter().any(|p| *p == Part::Var(name.to_string())) {
                return Err(format!("names the variable {name} twice"));
            }
            parts.push(Part::Var(name.to_string()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err("has a `}` without its `{`".into());
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        match parts.first() {
            Some(Part::Text(t)) if t.contains("://") => {}
            _ => return Err("must begin with a scheme and `://`, e.g. test://".into()),
        }
        if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
            return Err("has no variable (a fixed URI is a [resources] entry)".into());
        }
        Ok(UriTemplate {
            text: text.to_string(),
            parts,
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The variables' values if `uri` matches, as a JSON object.
    pub(crate) fn matches(&self, uri: &str) -> Option<Value> {
        let mut vars = Map::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Text(t) => rest = rest.strip_prefix(t.as_str())?,
                Part::Var(name) => {
                    // Up to the next literal text (a value holds no `/`,
                    // so the first place it appears is the only one).
                    let end = match parts.peek() {
                        Some(Part::Text(t)) => rest.find(t.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    let value = percent_encoding::percent_decode_str(raw)
                        .decode_utf8()
                        .ok()?;
                    let bad = value.is_empty()
                        || value.len() > MAX_VALUE
                        || value.contains(['/', '?', '#', '\0'])
                        || raw.contains(['/', '?', '#']);
                    if bad {
                        return None;
                    }
                    vars.insert(name.clone(), Value::String(value.into_owned()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(Value::Object(vars))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_matches_one_segment_per_variable() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(json!({"id": "123"}))
        );
        assert_eq!(
            t.matches("test://template/a%20b/data"),
            Some(json!({"id": "a b"}))
        );
        for miss in [
            "test://template//data",
            "test://template/1/2/data",
            "test://template/1%2F2/data",
            "test://template/1/data/more",
            "other://template/1/data",
            "test://template/1?x/data",
        ] {
            assert_eq!(t.matches(miss), None, "{miss}");
        }
        let long = format!("test://template/{}/data", "x".repeat(MAX_VALUE + 1));
        assert_eq!(t.matches(&long), None);
        let end = UriTemplate::parse("test://items/{name}").unwrap();
        assert_eq!(end.matches("test://items/x"), Some(json!({"name": "x"})));
    }

    #[test]
    fn only_simple_templates_with_a_scheme_are_taken() {
        for bad in [
            "test://a/{id",
            "test://a/id}",
            "test://a/{+path}",
            "test://a/{a}{b}",
            "test://a/{a}/{a}",
            "/a/{id}",
            "test://fixed",
            "test://a/{}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
