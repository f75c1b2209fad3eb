//! `NativeCaps`: a validated grant. Never changed once made; every
//! `with_*` returns a new one, validated again.

use crate::errors;
use pyo3::prelude::*;
use sbx_wasm::Capabilities;
use std::path::Path;

/// A caps file's text (or a dict turned into it) parsed once: what the
/// Python `Caps` wraps.
#[pyclass(frozen, module = "sbx_wasm._native")]
pub(crate) struct NativeCaps {
    pub(crate) caps: Capabilities,
}

#[pymethods]
impl NativeCaps {
    /// Parse caps TOML; relative host paths resolve against `base`.
    #[staticmethod]
    #[pyo3(signature = (text, base, origin=None))]
    fn from_toml(text: &str, base: &str, origin: Option<&str>) -> PyResult<Self> {
        let caps = Capabilities::from_toml(text, Path::new(base), origin.map(Path::new))
            .map_err(errors::caps)?;
        Ok(NativeCaps { caps })
    }

    /// Load a caps file; relative host paths resolve against its folder.
    #[staticmethod]
    fn from_file(path: &str) -> PyResult<Self> {
        let caps = Capabilities::from_file(path).map_err(errors::caps)?;
        Ok(NativeCaps { caps })
    }

    /// The caps file's keys as JSON (what `Caps.from_dict` serialises):
    /// turned into TOML and parsed as a caps file is, so the same keys,
    /// checks and messages apply.
    #[staticmethod]
    fn from_json(json: &str, base: &str) -> PyResult<Self> {
        let value: toml::Value = serde_json::from_str(json)
            .map_err(|e| errors::CapsError::new_err(format!("<dict>: {e}")))?;
        let text = toml::to_string(&value)
            .map_err(|e| errors::CapsError::new_err(format!("<dict>: {e}")))?;
        Self::from_toml(&text, base, Some("<dict>"))
    }

    /// This grant with the secret `name` holding `value`, sent only to
    /// `hosts` and only in `headers` (the guest sees a placeholder).
    fn with_secret(
        &self,
        name: &str,
        value: &str,
        hosts: Vec<String>,
        headers: Vec<String>,
    ) -> PyResult<Self> {
        let caps = self
            .caps
            .to_builder()
            .and_then(|b| b.secret(name, value, hosts, headers).build())
            .map_err(errors::caps)?;
        Ok(NativeCaps { caps })
    }

    /// This grant plus a write mount of the host folder `host` at `guest`.
    fn with_write_mount(&self, host: &str, guest: &str) -> PyResult<Self> {
        let caps = self
            .caps
            .to_builder()
            .and_then(|b| b.write_mount(host, guest).build())
            .map_err(errors::caps)?;
        Ok(NativeCaps { caps })
    }

    /// This grant plus the tools `names` on its allow-list.
    fn with_tools(&self, names: Vec<String>) -> PyResult<Self> {
        let caps = self
            .caps
            .to_builder()
            .and_then(|b| names.into_iter().fold(b, |b, n| b.allow_tool(n)).build())
            .map_err(errors::caps)?;
        Ok(NativeCaps { caps })
    }

    /// The grant as a caps file (secrets by where they come from, never
    /// their values).
    fn to_toml(&self) -> String {
        self.caps.to_toml()
    }

    /// What a model should be told of its room: folders, origins, the
    /// tools named, limits.
    fn room_for_model(&self, tools: Vec<String>) -> String {
        self.caps.room_for_model(&tools)
    }

    /// Warnings the grant raised when it was parsed (e.g. a wide rule).
    fn warnings(&self) -> Vec<String> {
        self.caps.warnings().to_vec()
    }

    /// Names of the tools the grant allows.
    fn tools(&self) -> Vec<String> {
        self.caps.tools().iter().cloned().collect()
    }

    /// Names of the secrets the grant holds (never their values).
    fn secret_names(&self) -> Vec<String> {
        self.caps
            .secrets()
            .iter()
            .map(|s| s.name().to_string())
            .collect()
    }

    fn __repr__(&self) -> String {
        let mounts: Vec<String> = self
            .caps
            .mounts()
            .iter()
            .map(|m| format!("{} ({})", m.guest, m.access.as_str()))
            .collect();
        format!(
            "Caps(mounts={mounts:?}, tools={:?}, secrets={:?})",
            self.tools(),
            self.secret_names()
        )
    }
}
