//! The `[secrets]` section of a caps file, secrets given in Rust, and the
//! validation every secret passes.
//!
//! ```toml
//! [secrets.GITHUB_TOKEN]
//! from_env = "SBX_GITHUB_TOKEN"        # or: from_file = "secrets/github"
//! hosts = ["https://api.github.com"]   # egress-rule syntax; each granted by [net]
//! headers = ["Authorization"]          # where the placeholder may be replaced
//! ```

use super::{Secret, SecretSource};
use crate::error::CapsError;
use crate::net::{Egress, EgressRule, HostPattern, PortPattern, forbidden_header};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `[secrets.NAME]` entries.
pub(crate) type SecretsSection = BTreeMap<String, SecretEntry>;

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from_file: Option<String>,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    headers: Vec<String>,
}

/// Where a requested secret's value is to come from.
#[derive(Clone, Debug)]
enum Given {
    Env(String),
    File(String),
    /// A value in hand, with where it first came from.
    Value(String, SecretSource),
    /// Both or neither of `from_env` and `from_file`.
    Unclear,
}

/// Secrets as requested, before validation.
#[derive(Clone, Default)]
pub(crate) struct RequestedSecrets(Vec<(String, Given, Vec<String>, Vec<String>)>);

impl std::fmt::Debug for RequestedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|s| &s.0)).finish()
    }
}

const NAME_FORM: &str = "an identifier: a letter or _, then letters, digits or _ (at most 64)";
const SOURCE_FORM: &str = "exactly one of from_env = \"VAR\" or from_file = \"path\"";

/// Render `secrets` as a caps-file section: where each value comes from,
/// never the value. Secrets given as Rust values are not rendered.
pub(crate) fn render(secrets: &[Secret]) -> SecretsSection {
    secrets
        .iter()
        .filter_map(|s| {
            let (from_env, from_file) = match &s.source {
                SecretSource::Env(v) => (Some(v.clone()), None),
                SecretSource::File(p) => (None, Some(p.display().to_string())),
                SecretSource::Value => return None,
            };
            let entry = SecretEntry {
                from_env,
                from_file,
                hosts: s.hosts.iter().map(|h| h.as_str().to_string()).collect(),
                headers: s.headers.clone(),
            };
            Some((s.name.clone(), entry))
        })
        .collect()
}

impl RequestedSecrets {
    /// Request the section's secrets.
    pub(crate) fn apply(&mut self, section: SecretsSection) {
        for (name, e) in section {
            let given = match (e.from_env, e.from_file) {
                (Some(v), None) => Given::Env(v),
                (None, Some(p)) => Given::File(p),
                _ => Given::Unclear,
            };
            self.0.push((name, given, e.hosts, e.headers));
        }
    }

    /// A secret whose value is in hand.
    pub(crate) fn value(
        &mut self,
        name: String,
        value: String,
        hosts: Vec<String>,
        headers: Vec<String>,
    ) {
        self.0.push((
            name,
            Given::Value(value, SecretSource::Value),
            hosts,
            headers,
        ));
    }

    /// Carry `secrets` of a built grant (values and sources kept).
    pub(crate) fn keep(&mut self, secrets: &[Secret]) {
        for s in secrets {
            self.0.push((
                s.name.clone(),
                Given::Value(s.value.clone(), s.source.clone()),
                s.hosts.iter().map(|h| h.as_str().to_string()).collect(),
                s.headers.clone(),
            ));
        }
    }

    /// Read and validate every secret (`from_file` relative to `base`):
    /// its name, its value, its hosts (each granted by `egress`), its
    /// headers; no name also in `[env]`.
    pub(crate) fn build(
        &self,
        base: &Path,
        egress: &Egress,
        env: &BTreeMap<String, String>,
    ) -> Result<Vec<Secret>, CapsError> {
        let mut out: Vec<Secret> = Vec::new();
        for (name, given, hosts, headers) in &self.0 {
            let key = format!("secrets.{name}");
            let ident = !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if !ident {
                return Err(CapsError::invalid(
                    key,
                    format!("{name:?} is not a secret name"),
                    NAME_FORM,
                ));
            }
            if out.iter().any(|s| s.name == *name) {
                return Err(CapsError::invalid(
                    key,
                    "is given twice",
                    "one entry per secret",
                ));
            }
            if env.contains_key(name) {
                return Err(CapsError::invalid(
                    key,
                    format!(
                        "{name} is also in [env]; the guest's {name} holds the secret's placeholder"
                    ),
                    "a name not in [env]",
                ));
            }
            let (value, source) = read_value(&key, given, base)?;
            let hosts = bound_hosts(&key, hosts, egress)?;
            let headers = bound_headers(&key, headers)?;
            out.push(Secret {
                name: name.clone(),
                value,
                source,
                hosts,
                headers,
            });
        }
        Ok(out)
    }
}

fn read_value(key: &str, given: &Given, base: &Path) -> Result<(String, SecretSource), CapsError> {
    let (value, source, from) = match given {
        Given::Unclear => return Err(CapsError::invalid(key, "has no single source", SOURCE_FORM)),
        Given::Env(var) => {
            let value = std::env::var(var).map_err(|_| {
                CapsError::invalid(
                    format!("{key}.from_env"),
                    format!("the environment variable {var} is not set (or not UTF-8)"),
                    "a variable set in the environment sbx-wasm runs in",
                )
            })?;
            (
                value,
                SecretSource::Env(var.clone()),
                format!("{key}.from_env"),
            )
        }
        Given::File(p) => {
            let path: PathBuf = base.join(p);
            let path = std::path::absolute(&path).unwrap_or(path);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                CapsError::invalid(
                    format!("{key}.from_file"),
                    format!("cannot read {}: {e}", path.display()),
                    "a readable UTF-8 file (relative to the caps file's folder)",
                )
            })?;
            // One trailing line end is the file's, not the secret's.
            let text = text
                .strip_suffix('\n')
                .map(|t| t.strip_suffix('\r').unwrap_or(t))
                .unwrap_or(&text)
                .to_string();
            (text, SecretSource::File(path), format!("{key}.from_file"))
        }
        Given::Value(v, source) => (v.clone(), source.clone(), key.to_string()),
    };
    if value.is_empty() {
        return Err(CapsError::invalid(
            from,
            "the value is empty",
            "a non-empty value",
        ));
    }
    if value.len() > 8192 || value.chars().any(char::is_control) {
        return Err(CapsError::invalid(
            from,
            "the value cannot go in an HTTP header (control characters, or over 8 KiB)",
            "printable text of at most 8 KiB",
        ));
    }
    Ok((value, source))
}

fn bound_hosts(key: &str, hosts: &[String], egress: &Egress) -> Result<Vec<EgressRule>, CapsError> {
    let key = format!("{key}.hosts");
    if hosts.is_empty() {
        return Err(CapsError::invalid(
            key,
            "is empty",
            "[\"https://api.example.com\"]",
        ));
    }
    let mut out = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let rule = EgressRule::parse(h).map_err(|e| {
            CapsError::invalid(format!("{key}[{i}]"), e.to_string(), crate::net::RULE_FORM)
        })?;
        if !granted(&rule, egress) {
            return Err(CapsError::invalid(
                format!("{key}[{i}]"),
                format!("{h} is not granted by [net]"),
                "a host a [net] allow rule covers",
            ));
        }
        out.push(rule);
    }
    Ok(out)
}

/// Whether `[net]` covers every URL `rule` does: the same rule, or a
/// single host and port that a rule allows.
fn granted(rule: &EgressRule, egress: &Egress) -> bool {
    if egress.allows_all() || egress.rules().iter().any(|r| r == rule) {
        return true;
    }
    let host = match rule.host() {
        HostPattern::Name(n) => n.clone(),
        HostPattern::Ip(std::net::IpAddr::V4(ip)) => ip.to_string(),
        HostPattern::Ip(std::net::IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => return false,
    };
    let PortPattern::Port(port) = rule.port() else {
        return false;
    };
    let Ok(url) = url::Url::parse(&format!("{}://{host}:{port}/", rule.scheme().as_str())) else {
        return false;
    };
    egress.rules().iter().any(|r| r.matches(&url))
}

fn bound_headers(key: &str, headers: &[String]) -> Result<Vec<String>, CapsError> {
    let key = format!("{key}.headers");
    if headers.is_empty() {
        return Err(CapsError::invalid(key, "is empty", "[\"Authorization\"]"));
    }
    let mut out = Vec::new();
    for (i, h) in headers.iter().enumerate() {
        let token = !h.is_empty()
            && h.len() <= 64
            && h.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c));
        if !token || forbidden_header(h) {
            return Err(CapsError::invalid(
                format!("{key}[{i}]"),
                format!(
                    "{h:?} is not a header a secret may be sent in (not a header name, or one the gate forbids: Host, proxy and client-IP headers, ...)"
                ),
                "a header name such as Authorization or X-Api-Key",
            ));
        }
        out.push(h.to_ascii_lowercase());
    }
    Ok(out)
}
