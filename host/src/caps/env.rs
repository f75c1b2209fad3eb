//! Environment variables the guest sees: the `[env]` section and its
//! validation. (Values are handed to the guest as they are: never put a
//! secret here.)

use super::CapabilitiesBuilder;
use crate::error::CapsError;
use std::collections::BTreeMap;

impl CapabilitiesBuilder {
    /// Grant the guest an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// Validate variables: a name without `=` or NUL, a value without NUL.
pub(crate) fn build_env(raw: &[(String, String)]) -> Result<BTreeMap<String, String>, CapsError> {
    let mut env = BTreeMap::new();
    for (k, v) in raw {
        let key = format!("env.{k}");
        if k.is_empty() || k.contains(['=', '\0']) {
            return Err(CapsError::invalid(
                key,
                "is not a valid variable name",
                "a non-empty name without `=` or NUL",
            ));
        }
        if v.contains('\0') {
            return Err(CapsError::invalid(
                key,
                "value contains NUL",
                "a string without NUL",
            ));
        }
        env.insert(k.clone(), v.clone());
    }
    Ok(env)
}
