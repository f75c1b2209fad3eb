//! `[ask]`: what a run may ask to be granted while it runs (see
//! [`crate::ask`]).
//!
//! ```toml
//! [ask]
//! net = ["https://api.example.org"]   # egress rules, as in [net] allow
//! tools = ["lookup"]                  # tool names, as in [tools] allow
//! max_questions = 3                   # per run (default 3, at most 100)
//! ```

use crate::ask::{AskGrant, DEFAULT_MAX_QUESTIONS, LIMIT_MAX_QUESTIONS};
use crate::capability::net::config::parse_rule;
use crate::capability::tools::config::check_name;
use crate::error::{CapsError, non_negative};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct AskSection {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    net: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_questions: Option<i64>,
}

/// The ask grant as requested, before validation.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestedAsk {
    net: Vec<String>,
    tools: Vec<String>,
    max_questions: Option<u32>,
}

impl AskSection {
    pub(crate) fn is_empty(&self) -> bool {
        self == &AskSection::default()
    }

    pub(crate) fn apply(self, to: &mut RequestedAsk) -> Result<(), CapsError> {
        to.net.extend(self.net);
        to.tools.extend(self.tools);
        if let Some(n) = non_negative("ask.max_questions", self.max_questions)? {
            to.max_questions = Some(u32::try_from(n).unwrap_or(u32::MAX));
        }
        Ok(())
    }

    /// The section that grants `ask` (empty for an empty grant).
    pub(crate) fn render(ask: &AskGrant) -> AskSection {
        if ask.is_empty() {
            return AskSection::default();
        }
        AskSection {
            net: ask.net.iter().map(|r| r.as_str().to_string()).collect(),
            tools: ask.tools.iter().cloned().collect(),
            max_questions: Some(i64::from(ask.max_questions)),
        }
    }
}

impl RequestedAsk {
    pub(crate) fn net(&mut self, rule: String) {
        self.net.push(rule);
    }

    pub(crate) fn tool(&mut self, name: String) {
        self.tools.push(name);
    }

    pub(crate) fn max_questions(&mut self, n: u32) {
        self.max_questions = Some(n);
    }

    /// Parse every entry. An entry the grant already holds is a warning
    /// (it is never asked about).
    pub(crate) fn build(
        &self,
        allowed_tools: &BTreeSet<String>,
        warnings: &mut Vec<String>,
    ) -> Result<AskGrant, CapsError> {
        let mut net = Vec::new();
        for (i, text) in self.net.iter().enumerate() {
            net.push(parse_rule(format!("ask.net[{i}]"), text)?);
        }
        let mut tools = BTreeSet::new();
        for (i, t) in self.tools.iter().enumerate() {
            check_name(format!("ask.tools[{i}]"), t)?;
            if allowed_tools.contains(t) {
                warnings.push(format!(
                    "ask.tools[{i}]: {t} is already in tools.allow, so it is never asked about"
                ));
            }
            tools.insert(t.clone());
        }
        let max_questions = self.max_questions.unwrap_or(DEFAULT_MAX_QUESTIONS);
        if max_questions > LIMIT_MAX_QUESTIONS {
            return Err(CapsError::invalid(
                "ask.max_questions",
                format!("{max_questions} is too many"),
                format!("0 to {LIMIT_MAX_QUESTIONS}"),
            ));
        }
        Ok(AskGrant {
            net,
            tools,
            max_questions,
        })
    }
}
