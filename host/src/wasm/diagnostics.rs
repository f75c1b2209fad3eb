//! What a host is set up with, in one value: for a log line at start, a
//! health endpoint, or `sbx-wasm doctor`.

use super::{Allocator, PageReset, WasmHost};
use serde::Serialize;
use std::path::PathBuf;

/// How a [`WasmHost`] is set up ([`WasmHost::diagnostics`]).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    /// `on_demand`, `pooling`, or `on_demand_fallback` (the pool was asked
    /// for and could not be reserved: `pool_fallback` says why).
    pub allocator: &'static str,
    /// Why the pool could not be reserved, for `on_demand_fallback`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_fallback: Option<String>,
    /// For a pooled host, how a slot's memory is reset between runs
    /// ([`PageReset::Unmapped`] on kernels that cannot report written
    /// pages: slower pooled runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_reset: Option<PageReset>,
    /// Whether compiled code counts fuel.
    pub meters_fuel: bool,
    /// Where compiled components are kept, if anywhere.
    pub cache_dir: Option<PathBuf>,
    /// Runs at once before the next waits, if the host limits them.
    pub max_concurrent: Option<usize>,
}

impl WasmHost {
    /// How this host is set up: its allocator (and for a pool, whether the
    /// build has the page-reset fix), fuel, cache folder and admission.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let host = sbx_wasm::wasm::WasmHost::new()?;
    /// let d = host.diagnostics();
    /// println!("{}", serde_json::to_string(&d)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn diagnostics(&self) -> Diagnostics {
        let (allocator, pool_fallback, page_reset) = match self.allocator() {
            Allocator::Pooling(_) => ("pooling", None, Some(PageReset::detect())),
            Allocator::OnDemandFallback(why) => ("on_demand_fallback", Some(why.clone()), None),
            _ => ("on_demand", None, None),
        };
        Diagnostics {
            allocator,
            pool_fallback,
            page_reset,
            meters_fuel: self.meters_fuel(),
            cache_dir: self.cache().map(|c| c.dir().to_path_buf()),
            max_concurrent: self.concurrency(),
        }
    }
}
