//! `sbx_wasm._native`: the Rust library, in process, for the Python package.
//!
//! This half is thin on purpose: it holds the grant, the engine and the
//! loaded runners, runs with the GIL released, and hands each run back as
//! JSON plus the output bytes. The typed results, the tool schemas derived
//! from type hints and the async forms are Python (`sbx_wasm/`), where a
//! Python user reads them.

mod caps;
mod errors;
mod events;
mod runners;
mod sandbox;
mod tools;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<caps::NativeCaps>()?;
    m.add_class::<sandbox::NativeSandbox>()?;
    m.add_class::<events::NativeCancel>()?;
    m.add_class::<events::NativeEvents>()?;
    m.add_function(wrap_pyfunction!(runners::build_runner, m)?)?;
    m.add_function(wrap_pyfunction!(runners::diagnostics, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::add(m)
}
