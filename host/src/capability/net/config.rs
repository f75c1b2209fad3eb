//! The network capability's part of a grant: the `[net]` section of a caps
//! file, the egress grant as requested (allow-all only through the
//! builder's `dangerous()` door), and the validation of the rules.
//!
//! ```toml
//! [net]
//! allow = ["https://api.example.com", "tcp://db.internal:5432"]
//! listen = ["127.0.0.1:*"]
//! max_redirects = 3
//! ```

use super::{Egress, EgressRule, LIMIT_MAX_REDIRECTS, LISTEN_FORM, ListenRule, RULE_FORM};
use crate::error::{CapsError, non_negative};
use serde::{Deserialize, Serialize};

/// `[net]`: allow rules, listen addresses, redirects, the loudly named
/// allow-all switch.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetSection {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    listen: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_redirects: Option<i64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    dangerous_allow_all: bool,
}

/// The egress grant as the builder was given it, before validation.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestedEgress {
    rules: Vec<String>,
    listen: Vec<String>,
    max_redirects: u32,
    allow_all: bool,
}

impl NetSection {
    /// Request this section's grant.
    pub(crate) fn apply(self, to: &mut RequestedEgress) -> Result<(), CapsError> {
        to.rules.extend(self.allow);
        to.listen.extend(self.listen);
        if let Some(n) = non_negative("net.max_redirects", self.max_redirects)? {
            to.max_redirects = u32::try_from(n).unwrap_or(u32::MAX);
        }
        to.allow_all |= self.dangerous_allow_all;
        Ok(())
    }

    /// The section that grants `egress`.
    pub(crate) fn render(egress: &Egress) -> NetSection {
        NetSection {
            allow: egress
                .rules()
                .iter()
                .map(|r| r.as_str().to_string())
                .collect(),
            listen: egress
                .listen()
                .iter()
                .map(|r| r.as_str().to_string())
                .collect(),
            max_redirects: Some(i64::from(egress.max_redirects())),
            dangerous_allow_all: egress.allows_all(),
        }
    }
}

impl RequestedEgress {
    /// Allow fetches matching `rule`.
    pub(crate) fn allow(&mut self, rule: String) {
        self.rules.push(rule);
    }

    /// Let a component's sockets bind the loopback address `rule`.
    pub(crate) fn listen(&mut self, rule: String) {
        self.listen.push(rule);
    }

    /// Follow up to `n` redirects per fetch.
    pub(crate) fn max_redirects(&mut self, n: u32) {
        self.max_redirects = n;
    }

    /// Allow a fetch of any http(s) URL (a dangerous option).
    pub(crate) fn allow_all(&mut self) {
        self.allow_all = true;
    }

    /// Parse every rule; warnings for what is valid but risky.
    pub(crate) fn build(&self, warnings: &mut Vec<String>) -> Result<Egress, CapsError> {
        let mut rules = Vec::new();
        for (i, text) in self.rules.iter().enumerate() {
            rules.push(parse_rule(format!("net.allow[{i}]"), text)?);
        }
        let mut listen = Vec::new();
        for (i, text) in self.listen.iter().enumerate() {
            listen.push(ListenRule::parse(text).map_err(|e| {
                CapsError::invalid(
                    format!("net.listen[{i}]"),
                    format!("{text:?}: {e}"),
                    LISTEN_FORM,
                )
            })?);
        }
        if self.max_redirects > LIMIT_MAX_REDIRECTS {
            return Err(CapsError::invalid(
                "net.max_redirects",
                format!("{} is too many", self.max_redirects),
                format!("0 to {LIMIT_MAX_REDIRECTS}"),
            ));
        }
        if self.allow_all {
            warnings.push(
                "net.dangerous_allow_all is on: the guest may fetch any http(s) URL, \
                 so nothing stops it sending what it reads to any host"
                    .to_string(),
            );
        }
        Ok(Egress {
            rules,
            listen,
            dangerous_allow_all: self.allow_all,
            max_redirects: self.max_redirects,
        })
    }
}

/// The egress rule `text` of the caps file's key `key`, or the error naming
/// the key and the rule form.
pub(crate) fn parse_rule(key: String, text: &str) -> Result<EgressRule, CapsError> {
    EgressRule::parse(text)
        .map_err(|e| CapsError::invalid(key, format!("{text:?}: {e}"), RULE_FORM))
}
