//! The budget's part of a grant: the `[budget]` section, the builder's
//! budget methods, and the bounds every budget passes.
//!
//! ```toml
//! [budget]
//! max_ops = 200
//! max_wall_ms = 10000
//! ```

use super::CapabilitiesBuilder;
use crate::budget::{self, Budget};
use crate::error::{CapsError, non_negative};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[budget]`: every key optional; a missing one keeps its default.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct BudgetSection {
    max_ops: Option<i64>,
    max_output_bytes: Option<i64>,
    max_wall_ms: Option<i64>,
    max_fuel: Option<FuelSetting>,
    max_memory_bytes: Option<i64>,
    max_write_bytes: Option<i64>,
    max_files: Option<i64>,
    max_sent_bytes: Option<i64>,
}

/// `max_fuel`: a count, or `"off"` for a wall-only grant.
#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
enum FuelSetting {
    Count(i64),
    Word(String),
}

impl BudgetSection {
    /// Set the budgets this section names on `b`.
    pub(crate) fn apply(
        self,
        mut b: CapabilitiesBuilder,
    ) -> Result<CapabilitiesBuilder, CapsError> {
        if let Some(n) = non_negative("budget.max_ops", self.max_ops)? {
            b = b.max_ops(n);
        }
        if let Some(n) = non_negative("budget.max_output_bytes", self.max_output_bytes)? {
            b = b.max_output_bytes(n);
        }
        if let Some(n) = non_negative("budget.max_wall_ms", self.max_wall_ms)? {
            b = b.max_wall(Duration::from_millis(n));
        }
        match self.max_fuel {
            None => {}
            Some(FuelSetting::Word(w)) if w == "off" => b = b.no_fuel(),
            Some(FuelSetting::Word(w)) => {
                return Err(CapsError::invalid(
                    "budget.max_fuel",
                    format!("{w:?} is not a fuel budget"),
                    "a non-negative integer, or \"off\" (wall-only: fuel not metered)",
                ));
            }
            Some(FuelSetting::Count(n)) => {
                if let Some(n) = non_negative("budget.max_fuel", Some(n))? {
                    b = b.max_fuel(n);
                }
            }
        }
        if let Some(n) = non_negative("budget.max_memory_bytes", self.max_memory_bytes)? {
            b = b.max_memory_bytes(n);
        }
        if let Some(n) = non_negative("budget.max_write_bytes", self.max_write_bytes)? {
            b = b.max_write_bytes(n);
        }
        if let Some(n) = non_negative("budget.max_files", self.max_files)? {
            b = b.max_files(n);
        }
        if let Some(n) = non_negative("budget.max_sent_bytes", self.max_sent_bytes)? {
            b = b.max_sent_bytes(n);
        }
        Ok(b)
    }

    /// The section naming every budget of `b` explicitly.
    pub(crate) fn render(b: &Budget) -> BudgetSection {
        let n = |v: u64| Some(i64::try_from(v).unwrap_or(i64::MAX));
        BudgetSection {
            max_ops: n(b.max_ops),
            max_output_bytes: n(b.max_output_bytes),
            max_wall_ms: n(u64::try_from(b.max_wall.as_millis()).unwrap_or(u64::MAX)),
            max_fuel: Some(if b.meter_fuel {
                FuelSetting::Count(i64::try_from(b.max_fuel).unwrap_or(i64::MAX))
            } else {
                FuelSetting::Word("off".into())
            }),
            max_memory_bytes: n(b.max_memory_bytes),
            max_write_bytes: n(b.max_write_bytes),
            max_files: n(b.max_files),
            max_sent_bytes: n(b.max_sent_bytes),
        }
    }
}

impl CapabilitiesBuilder {
    /// Set `max_ops`.
    pub fn max_ops(mut self, n: u64) -> Self {
        self.budget.max_ops = n;
        self
    }

    /// Set `max_output_bytes`.
    pub fn max_output_bytes(mut self, n: u64) -> Self {
        self.budget.max_output_bytes = n;
        self
    }

    /// Set `max_wall`.
    pub fn max_wall(mut self, d: Duration) -> Self {
        self.budget.max_wall = d;
        self
    }

    /// Set `max_fuel` (and meter fuel).
    pub fn max_fuel(mut self, n: u64) -> Self {
        self.budget.max_fuel = n;
        self.budget.meter_fuel = true;
        self
    }

    /// A wall-only grant: no fuel budget, no fuel metering; `max_wall`
    /// bounds a spinning guest. Runs on a host built without fuel
    /// ([`WasmHost::new_unmetered`](crate::wasm::WasmHost::new_unmetered))
    /// skip fuel instrumentation altogether.
    pub fn no_fuel(mut self) -> Self {
        self.budget.meter_fuel = false;
        self
    }

    /// Set `max_memory_bytes`.
    pub fn max_memory_bytes(mut self, n: u64) -> Self {
        self.budget.max_memory_bytes = n;
        self
    }

    /// Set `max_write_bytes` (bytes written into write mounts by one run).
    pub fn max_write_bytes(mut self, n: u64) -> Self {
        self.budget.max_write_bytes = n;
        self
    }

    /// Set `max_files` (files, folders and links created by one run).
    pub fn max_files(mut self, n: u64) -> Self {
        self.budget.max_files = n;
        self
    }

    /// Set `max_sent_bytes` (bytes one run sends to the network: requests
    /// as sent, socket writes, datagrams).
    pub fn max_sent_bytes(mut self, n: u64) -> Self {
        self.budget.max_sent_bytes = n;
        self
    }
}

/// Refuse a budget past what this host can honour.
pub(crate) fn check_budget(b: &Budget) -> Result<(), CapsError> {
    let checks: [(&str, u128, u128, &str); 8] = [
        (
            "max_ops",
            b.max_ops.into(),
            budget::LIMIT_MAX_OPS.into(),
            "",
        ),
        (
            "max_output_bytes",
            b.max_output_bytes.into(),
            budget::LIMIT_MAX_OUTPUT_BYTES.into(),
            " bytes",
        ),
        (
            "max_wall_ms",
            b.max_wall.as_millis(),
            budget::LIMIT_MAX_WALL.as_millis(),
            " ms (one day)",
        ),
        (
            "max_fuel",
            b.max_fuel.into(),
            budget::LIMIT_MAX_FUEL.into(),
            "",
        ),
        (
            "max_memory_bytes",
            b.max_memory_bytes.into(),
            budget::LIMIT_MAX_MEMORY_BYTES.into(),
            " bytes (a wasm32 memory cannot exceed 4 GiB)",
        ),
        (
            "max_write_bytes",
            b.max_write_bytes.into(),
            budget::LIMIT_MAX_WRITE_BYTES.into(),
            " bytes (1 TiB)",
        ),
        (
            "max_files",
            b.max_files.into(),
            budget::LIMIT_MAX_FILES.into(),
            "",
        ),
        (
            "max_sent_bytes",
            b.max_sent_bytes.into(),
            budget::LIMIT_MAX_SENT_BYTES.into(),
            " bytes (1 TiB)",
        ),
    ];
    for (key, value, max, unit) in checks {
        if value > max {
            return Err(CapsError::invalid(
                format!("budget.{key}"),
                format!("{value} is absurdly large"),
                format!("0 to {max}{unit}"),
            ));
        }
    }
    Ok(())
}
